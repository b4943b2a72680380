"""Messages an operator meets on the first day: each names the problem in one line, bad input
exits 2 and changes nothing, and an interrupted action says what it did and what to run next."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import l3ha.operations
from l3ha.cli.main import main
from l3ha.cloud.adapter import connect
from l3ha.cloud.dhcp import NeutronDhcp
from l3ha.emulator import Emulator
from l3ha.emulator.testing import SMALL, Clocking, emulated_cloud
from l3ha.executor import MoveOutcome, MoveResult, Progress, RunResult
from l3ha.model import Move, MoveKind


def _code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's usage errors
        return int(str(exc.code))


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


def _router_ids() -> list[str]:
    return sorted(r.id for r in connect().read_snapshot().routers)


def _enabled(emu: Emulator) -> list[bool]:
    return [bool(a["admin_state_up"]) for a in emu.state()["agents"]]


def test_a_missing_clouds_yaml_or_an_unknown_cloud_is_not_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere" / "clouds.yaml"
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(missing))
    monkeypatch.setenv("OS_CLOUD", "prod")
    assert main(["agent", "list"]) == 2
    err = _one_line(capsys)
    assert f"cloud 'prod' (from OS_CLOUD) not found in {missing}" in err and "no such file" in err
    other = tmp_path / "clouds.yaml"
    other.write_text("clouds:\n  staging:\n    auth_type: none\n", encoding="utf-8")
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(other))
    assert main(["agent", "list", "--os-cloud", "prod"]) == 2
    assert f"cloud 'prod' not found in {other} (it defines: staging)" in _one_line(capsys)


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]])
def test_draining_an_agent_onto_itself_is_bad_input(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], dry_run: list[str]
) -> None:
    assert main(["drain", "net-4", "--to", "net-4", *dry_run]) == 2
    assert "--to names net-4, the agent being drained" in _one_line(capsys)
    assert all(_enabled(emulator))


def test_undrain_of_an_agent_that_is_not_drained_says_so(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["undrain", "net-3"]) == 0
    err = capsys.readouterr().err
    assert "agent net-3 is not drained (enabled, no drain mark): nothing to undo" in err
    assert "net-3 enabled" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["history", "--state-dir", "/no/such/l3ha/state"], "/no/such/l3ha/state does not exist"),
        (["rebalance", "--max-routers-per-agent", "0"], "must be at least 1: '0'"),
        (["rebalance", "--max-weight-per-agent", "0"], "must be at least 1: '0'"),
    ],
)
def test_bad_options_are_usage_errors(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert _code(argv) == 2
    assert message in _one_line(capsys)


def test_a_router_file_with_commas_names_the_line(
    emulator: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    routers = _router_ids()[:3]
    listing = tmp_path / "routers.txt"
    listing.write_text(f"# to move\n{routers[0]}\n{routers[1]}, {routers[2]}\n", encoding="utf-8")
    assert main(["migrate", "--router-file", str(listing), "--dry-run"]) == 2
    assert f"router file {listing} line 3: " in _one_line(capsys)


def test_routers_are_named_by_a_unique_id_prefix_like_agents(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    router = _router_ids()[0]
    assert main(["migrate", router[:8], "--dry-run", "-f", "json"]) == 0
    assert router in capsys.readouterr().out
    assert main(["migrate", router[:3], "--dry-run"]) == 2  # too short to be a prefix
    assert f"1 unknown router(s): {router[:3]}; nothing was changed" in _one_line(capsys)


def test_ctrl_c_in_an_evacuation_says_how_far_it_got_and_what_next(
    emulator: Emulator, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted_after_three(ctx: Any, request: Any) -> Any:
        move = MoveResult(Move("r1", MoveKind.MOVE, "b", "a"), MoveOutcome.MOVED)
        for done in (2, 1, 3):  # the executor's workers report out of order
            ctx.progress(Progress(done, 10, move))
        raise KeyboardInterrupt

    monkeypatch.setattr(l3ha.operations, "run_action", interrupted_after_three)
    assert main(["evacuate", "net-2", "--force"]) == 130
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith("l3ha: evacuate interrupted after 3 finished move(s); run 'l3ha ")
    assert "repair' to finish the moves in flight" in err[-1]


def test_the_summary_counts_routers_not_moves() -> None:
    replaced = (  # an HA replica replaced: two moves of one router
        MoveResult(Move("r1", MoveKind.ADD_REPLICA, "b"), MoveOutcome.MOVED),
        MoveResult(Move("r1", MoveKind.REMOVE_REPLICA, None, "a"), MoveOutcome.MOVED),
        MoveResult(Move("r2", MoveKind.MOVE, "b", "a"), MoveOutcome.MOVED),
    )
    result = RunResult("drain", replaced)
    assert result.counts()["moved"] == 2
    assert result.summary_rows() == [{"outcome": "moved", "routers": 2}]


def test_evacuating_a_dhcp_agent_says_it_is_one_and_names_the_dhcp_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with emulated_cloud(
        Clocking.MANUAL, workdir=tmp_path, environ=os.environ, **SMALL, dhcp_agents=2, networks=2
    ):
        dhcp = NeutronDhcp(connect()).list_dhcp_agents()[0].id
        assert main(["evacuate", dhcp]) == 2
        err = _one_line(capsys)
        assert f"agent {dhcp!r} is a DHCP agent, not an L3 agent" in err
        assert f"for its networks: 'l3ha dhcp evacuate {dhcp}'" in err
        assert main(["evacuate", "0000ffff-0000-4000-8000-000000000000"]) == 2
        assert "no L3 agent with host or id" in _one_line(capsys)  # no agent at all
