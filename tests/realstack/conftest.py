"""Fixtures of the real-stack tier: real Neutron servers, RabbitMQ, MariaDB, OVS and agents.

Starts processes and namespaces (``l3rs-*``) through ``l3ha.lab.stack``. These tests
need root, the Debian packages of scripts/install-system-deps.sh and the Neutron
virtualenv (``L3HA_NEUTRON_PYTHON``) with PyMySQL; without them they skip with the
reason. Only one stack can run on a machine (the ``l3rs-`` prefix is fixed), so a
stack is shared per module and always torn down, also when a test fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from l3ha.lab.netns import list_namespaces
from l3ha.lab.stack.spec import StackSpec, owns_namespace
from l3ha.lab.stack.stack import REQUIRED_PROGRAMS, Stack, stack_up
from l3ha.lab.stack.teardown import teardown

RABBIT = Path("/usr/lib/rabbitmq/bin/rabbitmq-server")


def missing_reason() -> str | None:
    """Why the real stack cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, Open vSwitch)"
    missing = [p for p in REQUIRED_PROGRAMS if shutil.which(p) is None]
    if not RABBIT.exists():
        missing.append("rabbitmq-server")
    if missing:
        return f"needs {', '.join(missing)} (scripts/install-system-deps.sh)"
    python = os.environ.get("L3HA_NEUTRON_PYTHON")
    if not python or not Path(python).exists():
        return "needs the Neutron virtualenv (L3HA_NEUTRON_PYTHON)"
    probe = subprocess.run([python, "-c", "import pymysql"], capture_output=True, check=False)
    if probe.returncode != 0:
        return "needs PyMySQL in the Neutron virtualenv (tests/neutron_server/requirements.txt)"
    return None


REASON = missing_reason()
needs_stack = [
    pytest.mark.root,
    pytest.mark.neutron,
    pytest.mark.slow,
    pytest.mark.skipif(REASON is not None, reason=REASON or ""),
]


def leftovers(directory: Path) -> list[str]:
    """What a stack left behind: namespaces, processes naming its directory, the directory."""
    from l3ha.lab.stack.processes import pids_naming

    found = [n for n in list_namespaces() if owns_namespace(n)]
    found += [f"pid {p}" for p in pids_naming(str(directory) + "/")]
    if directory.exists():
        found.append(str(directory))
    return found


def sweep(directory: Path) -> None:
    """Remove a stack a crashed run left (namespaces with the prefix, its processes)."""
    if any(owns_namespace(n) for n in list_namespaces()) or directory.exists():
        teardown(directory)


def bring_up(directory: Path, spec: StackSpec) -> Iterator[Stack]:
    """A stack for the duration of a test module; torn down however the module ends."""
    sweep(directory)
    try:
        stack = stack_up(spec, directory)
        print(f"\nbring-up phases (s): {stack.state.data['bring_up']}")
        yield stack
    finally:
        teardown(directory)
