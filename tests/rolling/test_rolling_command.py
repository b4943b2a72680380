"""The maintenance command's runner: its output as it comes, and a command that outlives l3ha."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from l3ha.operations.rolling.command import group_alive, run_command

from .rolling_process import wait_until


def test_every_line_arrives_in_order_with_stderr_and_the_last_unterminated_one() -> None:
    lines: list[str] = []
    script = "echo one; echo two >&2; sleep 0.2; printf 'three\\nfour'; exit 3"
    result = run_command(["sh", "-c", script], lines.append, 30, time.monotonic)
    assert lines == ["one", "two", "three", "four"]
    assert result.exit_code == 3 and result.problem == "exited with code 3"


def test_a_command_that_cannot_start_is_a_problem_not_a_crash() -> None:
    result = run_command(["/nonexistent/upgrade"], print, 30, time.monotonic)
    assert result.exit_code is None and result.problem.startswith("cannot run /nonexistent")


#: l3ha's side: runs the command, prints its pid and every line it says.
RUNNER = """
import sys, time
from l3ha.operations.rolling.command import run_command
def say(text):
    print(text, flush=True)
run_command(["sh", "-c", sys.argv[1]], say, 60, time.monotonic, lambda pid: say(f"pgid {pid}"))
"""


def test_a_command_goes_on_writing_after_l3ha_is_killed(tmp_path: Path) -> None:
    """No pipe whose reader died may kill the upgrade at its next line (SIGPIPE)."""
    go, done = tmp_path / "go", tmp_path / "done"
    script = (f'echo started; for i in $(seq 400); do [ -e "{go}" ] && break; sleep 0.05; done; '
              f'echo "still writing"; echo finished > "{done}"')  # fmt: skip
    l3ha = subprocess.Popen([sys.executable, "-c", RUNNER, script], text=True,
                            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)  # fmt: skip
    assert l3ha.stdout is not None
    pgid = int(l3ha.stdout.readline().split()[1])
    assert l3ha.stdout.readline().strip() == "started"
    l3ha.send_signal(signal.SIGKILL)
    l3ha.communicate(timeout=10)
    go.touch()
    wait_until(lambda: not group_alive(pgid), 20, "the command to end")
    assert done.exists() and done.read_text() == "finished\n"
