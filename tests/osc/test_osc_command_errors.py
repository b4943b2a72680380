"""``openstack l3ha ...`` commands run in-process (no ``openstack`` process): an l3ha
error and an interrupted run end as ``l3ha`` ends them, one line and its exit code."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from l3ha.cli.osc.commands import Evacuate
from l3ha.errors import BadInputError


def run(func: object, tmp_path: Path) -> int:
    command = Evacuate(None, None)  # no app: the handler never asks for a connection
    args = argparse.Namespace(func=func, state_dir=str(tmp_path), finishes_interrupted=True)
    return command.take_action(args)


def test_ctrl_c_says_how_far_it_got_on_one_line_and_exits_130(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(_args: argparse.Namespace) -> int:
        raise KeyboardInterrupt("evacuate interrupted after 3 finished move(s); run 'x'")

    assert run(interrupted, tmp_path) == 130
    err = capsys.readouterr().err
    assert err == "openstack l3ha: evacuate interrupted after 3 finished move(s); run 'x'\n"


def test_an_l3ha_error_is_one_line_with_its_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def refused(_args: argparse.Namespace) -> int:
        raise BadInputError("no L3 agent with host or id 'net-9'")

    assert run(refused, tmp_path) == 2
    assert capsys.readouterr().err == "openstack l3ha: error: no L3 agent with host or id 'net-9'\n"
