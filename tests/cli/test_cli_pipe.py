"""A reader that goes away (``l3ha ... | head``) ends a command quietly, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from l3ha.cli.main import EXIT_PIPE
from l3ha.emulator import Emulator, EmulatorConfig

L3HA = [sys.executable, "-c", "from l3ha.cli.main import run; run()"]


def _with_reader_gone(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run ``l3ha argv`` with its stdout a pipe closed before it writes: exit code, stderr."""
    child = subprocess.Popen([*L3HA, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, env=env, text=True)  # fmt: skip
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()
    err = child.stderr.read()
    return child.wait(timeout=120), err


@pytest.mark.parametrize(
    ("argv", "exit_code"),
    [(["--help"], 0), (["rolling", "--help"], 0), (["config", "sample"], EXIT_PIPE)],
)  # argparse's help drops what it cannot write; a command's output ends with EXIT_PIPE
def test_a_closed_stdout_ends_every_command_quietly(argv: list[str], exit_code: int) -> None:
    code, err = _with_reader_gone(argv, dict(os.environ))
    assert err == "" and code == exit_code


def test_rolling_piped_to_head_exits_quietly(tmp_path: Path) -> None:
    with Emulator(EmulatorConfig(agents=3, routers=6, seed=2)) as emu:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        env.update(OS_CLIENT_CONFIG_FILE=str(emu.write_clouds_yaml(tmp_path / "clouds.yaml")),
                   OS_CLOUD="l3ha-emulator", L3HA_STATE_DIR=str(tmp_path / "state"))  # fmt: skip
        argv = ["rolling", "--hosts", "net-1,net-2", "--no-run", "--dry-run"]
        code, err = _with_reader_gone(argv, env)
        assert "Traceback" not in err and "BrokenPipeError" not in err, err
        assert code == EXIT_PIPE
        assert all(a["admin_state_up"] for a in emu.state()["agents"])
