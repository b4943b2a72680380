"""Running the maintenance command of one host. I/O: a child process.

The argv comes from ``plan.command_argv`` (no shell unless asked). The
child gets its own session, stdin from /dev/null and stdout and stderr
merged into a file (unlinked at once) that l3ha reads as it grows: every
line is handed to ``on_line`` as it arrives (the CLI prints it, the journal
keeps it). A file, not a pipe, so that a killed l3ha cannot take the command
with it: a pipe without its reader kills a command at its next line of output
(SIGPIPE), an upgrade half done. A command that outlives ``timeout`` is
killed with its whole process group. A command that cannot be started (not
found, not executable) is a failed step, not a crash. Its process group
outlives a killed l3ha: ``group_alive`` tells whether it still runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TextIO

from l3ha.journal.statedir import process_alive

KILL_GRACE = 5.0  # seconds between SIGTERM and SIGKILL of a command that timed out
OUTPUT_POLL = 0.05  # seconds between looks at the command's output file when it has no more


@dataclass(frozen=True)
class CommandResult:
    """How the command ended: its exit code (None: not started or killed) and why."""

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
    with _output_file() as (write_fd, source):
        try:
            child = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=write_fd,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            return CommandResult(None, 0.0, f"cannot run {argv[0]}: {reason}")
        finally:
            os.close(write_fd)  # the child, if it runs, holds its own copy
        if on_start is not None:
            on_start(child.pid)
        reader = threading.Thread(target=_pump, args=(child, source, on_line), daemon=True)
        reader.start()
        try:
            code: int | None = child.wait(timeout=timeout)
            problem = "" if code == 0 else f"exited with code {code}"
        except subprocess.TimeoutExpired:
            _kill_group(child)
            code, problem = None, f"still running after {timeout:g} s: killed"
        reader.join(timeout=KILL_GRACE)
    return CommandResult(code, monotonic() - started, problem)


@contextlib.contextmanager
def _output_file() -> Iterator[tuple[int, TextIO]]:
    """An unlinked file: a descriptor the child appends to, and our own reading of it."""
    fd, path = tempfile.mkstemp(prefix="l3ha-command-")
    try:
        source = open(path, encoding="utf-8", errors="replace")  # noqa: SIM115
    except OSError:
        os.close(fd)
        raise
    finally:
        os.unlink(path)
    with source:
        yield fd, source


def group_alive(pgid: int) -> bool:
    """Whether any process of the group a command started is still running."""
    return process_alive(-pgid)  # a negative pid names the process group


def _pump(child: subprocess.Popen[bytes], source: TextIO, on_line: Callable[[str], None]) -> None:
    """Every line the command writes, as it writes it, until it has ended."""
    partial = ""
    while True:
        text = source.readline()
        if text.endswith("\n"):
            on_line(partial + text[:-1])
            partial = ""
        elif child.poll() is None:
            partial += text
            time.sleep(OUTPUT_POLL)
        else:  # ended: what it wrote last, then stop
            for line in (partial + text + source.read()).splitlines():
                on_line(line)
            return


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, sig)
        try:
            child.wait(timeout=KILL_GRACE)
            return
        except subprocess.TimeoutExpired:
            continue
