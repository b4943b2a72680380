"""The stack's processes and its state file. I/O: spawns and signals processes, reads /proc.

Every process the stack starts leads a session of its own (so that it outlives
the command that started it and its children can be signalled as a group) and
is recorded by role and PID in ``stack.json``. Processes that escape the record
(oslo.privsep helpers detach from their agents, Erlang's epmd) are found by a
command line naming the stack's own directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from l3ha.errors import L3haError
from l3ha.lab.netns import alive, cmdline, kill_now, terminate


class StackError(L3haError):
    """The stack could not be brought up, changed or torn down."""


def spawn(
    role: str,
    argv: list[str],
    log_dir: Path,
    *,
    namespace: str | None = None,
    env: Mapping[str, str] | None = None,
) -> int:
    """Start ``argv`` (inside ``namespace`` if given) in its own session; its PID."""
    if namespace is not None:
        argv = ["ip", "netns", "exec", namespace, *argv]
    return spawn_logged(argv, log_dir / f"{role}.out", env)


def spawn_logged(argv: list[str], log: Path, env: Mapping[str, str] | None = None) -> int:
    """Start ``argv`` in its own session, its output appended to ``log``; its PID."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
    return process.pid


def run(argv: list[str], *, env: Mapping[str, str] | None = None, timeout: float = 120.0) -> str:
    """Run a short command to completion; its stdout, or a one-line StackError."""
    try:
        result = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
            env={**os.environ, **(env or {})},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StackError(f"{argv[0]}: {exc}") from exc
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines()
        raise StackError(f"{' '.join(argv[:3])}: {lines[-1] if lines else 'failed'}")
    return result.stdout


def stop_groups(
    pids: Iterable[int], grace: float = 10.0, awaited: Iterable[int] | None = None
) -> list[int]:
    """SIGTERM every group at once, SIGKILL what is left once the ``awaited`` ones (default:
    all) have exited or after ``grace``; the pids that ran."""
    running = [pid for pid in pids if alive(pid)]
    terminate(running, grace, groups=True, awaited=awaited)
    return running


def pids_naming(text: str) -> list[int]:
    """Processes whose command line contains ``text`` (e.g. the stack's directory)."""
    found = []
    for entry in Path("/proc").iterdir():
        pid = int(entry.name) if entry.name.isdigit() else 0
        if pid and pid != os.getpid() and text in cmdline(pid):
            found.append(pid)
    return found


def wait_for(what: str, check: Callable[[], bool], timeout: float, interval: float = 0.2) -> None:
    """Poll ``check`` until it holds; a StackError naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(interval)
    raise StackError(f"timed out after {timeout:.0f} s waiting for {what}")


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
        return True
    return False


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports free on 127.0.0.1 right now."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


class StateFile:
    """``stack.json``: the spec, ports and every recorded PID, rewritten on each change."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2, sort_keys=True))
        tmp.replace(self.path)

    @property
    def pids(self) -> dict[str, int]:
        pids: dict[str, int] = self.data.setdefault("pids", {})
        return pids

    def record(self, role: str, pid: int) -> int:
        self.pids[role] = pid
        self.save()
        return pid

    def forget(self, *roles: str) -> list[int]:
        """The pids recorded under ``roles`` (those that are), no longer recorded."""
        pids = [self.pids.pop(role) for role in roles if role in self.pids]
        self.save()
        return pids

    def stop(self, *roles: str, grace: float = 10.0) -> None:
        """Stop the process groups recorded under ``roles`` (SIGKILL after ``grace``); forget
        them."""
        stop_groups(self.forget(*roles), grace)

    def kill(self, *roles: str) -> None:
        """SIGKILL the processes recorded under ``roles`` at once (a crash); forget them."""
        kill_now(self.forget(*roles))
