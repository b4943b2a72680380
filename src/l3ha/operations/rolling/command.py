"""Running the maintenance command of one host. I/O: a child process.

The argv comes from ``plan.command_argv`` (no shell unless asked). The
child gets its own session, stdin from /dev/null and stdout and stderr
merged; every line is handed to ``on_line`` as it arrives (the CLI prints
it, the journal keeps it). A command that outlives ``timeout`` is killed
with its whole process group. A command that cannot be started (not
found, not executable) is a failed step, not a crash. Its process group
outlives a killed l3ha: ``group_alive`` tells whether it still runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass

KILL_GRACE = 5.0  # seconds between SIGTERM and SIGKILL of a command that timed out


@dataclass(frozen=True)
class CommandResult:
    """How the command ended: its exit code (None: not started or killed) and why."""

    argv: tuple[str, ...]
    exit_code: int | None
    seconds: float
    problem: str = ""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.problem


def run_command(
    argv: list[str],
    on_line: Callable[[str], None],
    timeout: float,
    monotonic: Callable[[], float],
    on_start: Callable[[int], None] | None = None,
) -> CommandResult:
    """Run ``argv`` to its end (or ``timeout``), streaming its output lines to ``on_line``;
    ``on_start`` gets the child's pid (also its process group) once it runs."""
    started = monotonic()
    try:
        child = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            text=True,
            errors="replace",
            bufsize=1,
        )
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return CommandResult(tuple(argv), None, 0.0, f"cannot run {argv[0]}: {reason}")
    if on_start is not None:
        on_start(child.pid)
    reader = threading.Thread(target=_pump, args=(child, on_line), daemon=True)
    reader.start()
    try:
        code: int | None = child.wait(timeout=timeout)
        problem = "" if code == 0 else f"exited with code {code}"
    except subprocess.TimeoutExpired:
        _kill_group(child)
        code, problem = None, f"still running after {timeout:g} s: killed"
    reader.join(timeout=KILL_GRACE)
    return CommandResult(tuple(argv), code, monotonic() - started, problem)


def group_alive(pgid: int) -> bool:
    """Whether any process of the group a command started is still running."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _pump(child: subprocess.Popen[str], on_line: Callable[[str], None]) -> None:
    assert child.stdout is not None
    with child.stdout:
        for line in child.stdout:
            on_line(line.rstrip("\n"))


def _kill_group(child: subprocess.Popen[str]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, sig)
        try:
            child.wait(timeout=KILL_GRACE)
            return
        except subprocess.TimeoutExpired:
            continue
