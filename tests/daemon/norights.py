"""Run a command without the rights an ICMP probe needs (test helper; needs root).

The command runs in a network namespace of its own (its loopback up, nothing else), where
unprivileged ICMP sockets are off (``net.ipv4.ping_group_range = 1 0``), as root without
CAP_NET_RAW: it can read every file but open neither a raw nor a datagram ICMP socket.
The namespace has no name and goes away with the command.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence

import pytest

SETUP = (
    "ip link set lo up && sysctl -qw net.ipv4.ping_group_range='1 0' && "
    'exec setpriv --bounding-set=-net_raw --inh-caps=-net_raw "$@"'
)

needs_root_tools = pytest.mark.skipif(
    os.geteuid() != 0 or not all(shutil.which(tool) for tool in ("unshare", "setpriv", "ip")),
    reason="needs root, unshare, setpriv and ip",
)


def run_without_raw_sockets(
    argv: Sequence[str], env: Mapping[str, str] | None = None, timeout: float = 60.0
) -> subprocess.CompletedProcess[str]:
    """``argv`` in a fresh network namespace without ICMP rights; its exit code and output."""
    return subprocess.run(
        ["unshare", "--net", "sh", "-c", SETUP, "sh", *argv],
        env=None if env is None else dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
