"""The entry point: help, usage errors and error-to-exit-code translation."""

from __future__ import annotations

import subprocess
import sys

import pytest

from l3ha.cli.main import main


def test_help_lists_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    assert "Neutron routers" in capsys.readouterr().out


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
