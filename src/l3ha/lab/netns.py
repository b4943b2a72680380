"""Namespaces, veth pairs, the bridge and processes inside namespaces. I/O: runs ``ip``, signals.

Thin wrappers over iproute2 so that what the lab does is exactly what an
operator would type. Process helpers only ever signal pids they were given
(recorded by the lab, or found inside the lab's own namespaces).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

from l3ha.errors import L3haError

NETNS_DIR = Path("/run/netns")


class LabCommandError(L3haError):
    """An ``ip`` command the lab needed failed."""


def ip(*args: str) -> str:
    """Run ``ip ARGS``; its stdout, or a one-line LabCommandError."""
    result = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise LabCommandError(f"ip {' '.join(args)}: {detail[-1] if detail else 'failed'}")
    return result.stdout


def list_namespaces() -> list[str]:
    """Names of every named network namespace."""
    try:
        return sorted(p.name for p in NETNS_DIR.iterdir())
    except FileNotFoundError:
        return []


IPV6_OFF = ("net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")


def add_namespace(name: str) -> None:
    """A namespace with IPv6 off (no automatic fe80:: addresses on its links) and lo up."""
    ip("netns", "add", name)
    ip("netns", "exec", name, "sysctl", "-q", "-e", "-w", *IPV6_OFF)
    ip("-n", name, "link", "set", "lo", "up")


def delete_namespace(name: str) -> None:
    with contextlib.suppress(LabCommandError):
        ip("netns", "del", name)


def pids_in(namespace: str) -> list[int]:
    """Processes whose network namespace is ``namespace``."""
    try:
        out = ip("netns", "pids", namespace)
    except LabCommandError:
        return []
    return [int(p) for p in out.split()]


def add_bridge(namespace: str, bridge: str) -> None:
    ip("-n", namespace, "link", "add", bridge, "type", "bridge")
    ip("-n", namespace, "link", "set", bridge, "up")


def add_port(bridge_ns: str, bridge: str, port: str, *, peer_ns: str, peer: str, cidr: str) -> None:
    """A veth pair: ``port`` on the bridge, ``peer`` (with ``cidr``) in ``peer_ns``."""
    ip("-n", bridge_ns, "link", "add", port, "type", "veth", "peer", "name", peer, "netns", peer_ns)
    ip("-n", bridge_ns, "link", "set", port, "master", bridge, "up")
    ip("-n", peer_ns, "address", "add", cidr, "dev", peer)
    ip("-n", peer_ns, "link", "set", peer, "up")


def cut_port(bridge_ns: str, port: str) -> None:
    """Take ``port`` off the bridge: the node keeps carrier but reaches nobody."""
    ip("-n", bridge_ns, "link", "set", port, "nomaster")


def restore_port(bridge_ns: str, bridge: str, port: str) -> None:
    ip("-n", bridge_ns, "link", "set", port, "master", bridge)


def alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def terminate(
    pids: Iterable[int],
    grace: float = 5.0,
    *,
    groups: bool = False,
    awaited: Iterable[int] | None = None,
) -> list[int]:
    """SIGTERM each pid (with ``groups``, the process group it leads), SIGKILL what is left
    once the ``awaited`` ones (default: all) have exited or after ``grace`` s; the pids
    killed hard."""
    running = [p for p in pids if alive(p)]
    for pid in running:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            (os.killpg if groups else os.kill)(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    pending = running if awaited is None else [p for p in awaited if p in running]
    while pending and time.monotonic() < deadline:
        time.sleep(0.02)
        reap(running)
        pending = [p for p in pending if alive(p)]
    left = [p for p in running if alive(p)]
    kill_now(left, groups=groups)
    return left


def kill_now(pids: Iterable[int], *, groups: bool = True) -> None:
    """SIGKILL each pid (and with ``groups`` the group it leads) at once (a node that dies)."""
    pids = list(pids)
    for pid in pids:
        for kill in (os.killpg, os.kill) if groups else (os.kill,):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                kill(pid, signal.SIGKILL)
    reap(pids)


def reap(pids: Iterable[int]) -> None:
    """Collect exit statuses of our own children among ``pids`` (others are not ours to wait)."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
