"""Session cleanup for the monitor tests: namespaces ``l3ha-mon-*`` left by crashed runs.

Test namespaces are named ``l3ha-mon-<pytest pid>-<hex>``. At session start
the ones whose pytest process is gone (and old-style ``l3ha-mon-<hex>`` ones)
are removed with every process inside them; at session end this session's
own are removed too. Namespaces of another pytest still running are left alone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import pytest

from l3ha.lab import netns

PREFIX = "l3ha-mon-"
_OWNED = re.compile(rf"^{PREFIX}(?:(?P<pid>\d+)-)?[0-9a-f]+$")


def namespace_name(unique: str) -> str:
    """The name of a test namespace of this session."""
    return f"{PREFIX}{os.getpid()}-{unique}"


def leftovers(include_own: bool) -> list[str]:
    """Test namespaces whose creating pytest is gone (or is this one, if ``include_own``)."""
    found = []
    for name in netns.list_namespaces():
        match = _OWNED.match(name)
        if match is None:
            continue
        pid = int(match["pid"]) if match["pid"] else None
        if pid is None or not netns.alive(pid) or (include_own and pid == os.getpid()):
            found.append(name)
    return found


def sweep(include_own: bool) -> list[str]:
    """Kill the processes inside leftover test namespaces and delete them."""
    swept = leftovers(include_own)
    for name in swept:
        netns.terminate(netns.pids_in(name), grace=2.0)
        netns.delete_namespace(name)
    return swept


@pytest.fixture(scope="session", autouse=True)
def sweep_monitor_namespaces() -> Iterator[None]:
    if os.geteuid() != 0:
        yield
        return
    sweep(include_own=False)
    yield
    sweep(include_own=True)
