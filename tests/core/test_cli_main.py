"""The entry point: help, usage errors and error-to-exit-code translation."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

import pytest

from l3ha.cli.main import build_parser, main

#: The commands README and docs name; each must be registered and listed by ``--help``.
DOCUMENTED_COMMANDS = (
    "evacuate",
    "drain",
    "undrain",
    "migrate",
    "rebalance",
    "repair",
    "history",
    "agent",
    "router",
    "check",
    "plan",
    "snapshot",
    "watch",
    "probe",
    "ha",
    "emulator",
)


def test_help_lists_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "Neutron routers" in out
    listed = {  # "    NAME  help", not the wrapped help lines below it
        line.split()[0] for line in out.splitlines() if re.match(r"    \S", line)
    }
    assert set(DOCUMENTED_COMMANDS) <= listed, set(DOCUMENTED_COMMANDS) - listed
    assert "evacuate     move every router off a dead agent" in out  # with its help text
    commands = next(
        a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    )
    assert set(commands.choices) == listed  # every registered command, nothing else


def test_unknown_command_is_a_one_line_usage_error() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "l3ha.cli.main", "no-such-command"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "error:" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage:" in capsys.readouterr().out
