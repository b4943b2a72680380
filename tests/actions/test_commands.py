"""The action commands end to end against the emulator: evacuate, migrate, rebalance, drain,
undrain, repair, plan, check and history, with their exit codes and safety gates."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from tests.actions.conftest import wait_for

from l3ha.cli.main import main
from l3ha.cloud.adapter import connect
from l3ha.emulator import CLOUD_NAME as CLOUD
from l3ha.emulator import Emulator
from l3ha.model import Snapshot
from l3ha.weights import WeightPolicy


def _snapshot() -> Snapshot:
    return connect(CLOUD).read_snapshot()


def _agent_id(snapshot: Snapshot, host: str) -> str:
    return snapshot.find_agent(host).id


def _kill(emu: Emulator, host: str) -> None:
    emu.faults.kill_agent(host)
    wait_for(lambda: not _snapshot().find_agent(host).alive)


def _json(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_evacuate_dead_agent_moves_everything_and_spreads_busy_routers(
    cloud_env: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    _kill(cloud_env, "net-1")
    before = _snapshot()
    dead = _agent_id(before, "net-1")
    hosted = {b.router_id for b in before.bindings_of_agent(dead)}
    assert hosted

    assert main(["evacuate", "net-1", "--port-timeout", "20", "-f", "json"]) == 0
    summary = _json(capsys)
    moves = summary["moves"]
    assert {m["outcome"] for m in moves} == {"moved"}  # type: ignore[attr-defined, index]
    assert {m["router"] for m in moves} == hosted  # type: ignore[attr-defined, index]

    after = _snapshot()
    assert after.bindings_of_agent(dead) == ()
    assert after.unhosted_routers() == ()
    for router_id in hosted:
        assert after.bindings_of_router(router_id)
        for port in connect(CLOUD).router_ports(router_id):
            assert port.status in ("ACTIVE", "N/A"), port
    # Busy routers went to the least-busy agents, one each (HA replicas count too).
    weights = WeightPolicy()
    live = [a.id for a in before.agents if a.alive]
    busy_before = Counter(
        b.agent_id for b in before.bindings if weights.is_busy(before.routers_by_id[b.router_id])
    )
    busy_moved = [
        m
        for m in moves  # type: ignore[attr-defined]
        if weights.is_busy(before.routers_by_id[m["router"]]) and m["kind"] == "move"
    ]
    assert busy_moved
    targets = [after.find_agent(m["target"]).id for m in busy_moved]
    assert len(set(targets)) == len(targets)
    least = sorted(busy_before.get(a, 0) for a in live)[len(targets) - 1]
    assert all(busy_before.get(t, 0) <= least for t in targets)


def test_evacuate_refuses_a_live_agent_and_changes_nothing(
    cloud_env: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _snapshot()
    assert main(["evacuate", "net-2"]) == 3
    err = capsys.readouterr().err
    assert "drain" in err and err.count("\n") == 1
    assert set(_snapshot().bindings) == set(before.bindings)


def test_unknown_agent_is_exit_2_with_candidates(
    cloud_env: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["evacuate", "net-99"]) == 2
    err = capsys.readouterr().err
    assert "net-99" in err and "known hosts: net-1, net-2" in err
    assert err.count("\n") == 1


def test_a_bad_api_rate_is_a_one_line_usage_error_and_changes_nothing(
    cloud_env: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    _kill(cloud_env, "net-1")
    before = _snapshot()
    with pytest.raises(SystemExit) as exit_info:
        main(["evacuate", "net-1", "--api-rate", "0"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--api-rate" in err and err.count("\n") == 1
    assert set(_snapshot().bindings) == set(before.bindings)


def test_a_low_api_rate_paces_the_whole_command(
    cloud_env: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every call of the command (snapshot read, writes, read-backs, polls) takes a token."""
    import time

    _kill(cloud_env, "net-1")
    started = time.monotonic()
    assert main(["evacuate", "net-1", "--no-wait", "--api-rate", "20", "-f", "json"]) == 0
    elapsed = time.monotonic() - started
    moved = _json(capsys)["counts"]["moved"]  # type: ignore[index]
    calls = 4 * int(moved) + 2  # at least: 4 per move, listing agents and routers
    assert elapsed >= (calls - 20) / 20 * 0.9  # all but the first second's burst paced


def test_migrate_router_file_with_unknown_ids_changes_nothing_unless_skipped(
    cloud_env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _snapshot()
    legacy = [r for r in before.routers if not r.ha and not r.distributed][:3]
    target = before.find_agent("net-5")
    movable = [r for r in legacy if before.bindings_of_router(r.id)[0].agent_id != target.id]
    lines = ["# routers to move", "", *(r.id for r in movable), movable[0].id, "no-such-router"]
    router_file = tmp_path / "routers.txt"
    router_file.write_text("\n".join(lines) + "\n", encoding="utf-8")

    assert main(["migrate", "--router-file", str(router_file), "--to", "net-5"]) == 2
    assert "no-such-router" in capsys.readouterr().err
    assert set(_snapshot().bindings) == set(before.bindings)

    args = ["migrate", "--router-file", str(router_file), "--to", "net-5", "--skip-unknown"]
    assert main([*args, "--port-timeout", "20"]) == 0
    after = _snapshot()
    for router in movable:
        assert [b.agent_id for b in after.bindings_of_router(router.id)] == [target.id]


def test_rebalance_fills_an_empty_agent_with_every_agent_donating(
    cloud_env: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    _kill(cloud_env, "net-3")
    assert main(["evacuate", "net-3", "--port-timeout", "20"]) == 0
    cloud_env.faults.revive_agent("net-3")
    wait_for(lambda: _snapshot().find_agent("net-3").alive)
    capsys.readouterr()

    assert main(["rebalance", "--port-timeout", "20", "-f", "json"]) == 0
    moved = _json(capsys)["moves"]
    after = _snapshot()
    per_agent = Counter(b.agent_id for b in after.bindings)
    counts = [per_agent.get(a.id, 0) for a in after.agents]
    assert max(counts) - min(counts) <= 1
    donors = {m["source"] for m in moved}  # type: ignore[attr-defined, index]
    assert len(donors) >= 3  # not one donor: every over-full agent gives


def test_drain_moves_routers_then_disables_and_undrain_enables(
    cloud_env: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["drain", "net-4", "--port-timeout", "20"]) == 0
    after = _snapshot()
    agent = after.find_agent("net-4")
    assert not agent.admin_state_up
    assert after.bindings_of_agent(agent.id) == ()
    assert after.unhosted_routers() == ()

    assert main(["undrain", "net-4"]) == 0
    assert _snapshot().find_agent("net-4").admin_state_up


def test_plan_offline_from_a_snapshot_needs_no_cloud(
    cloud_env: Emulator,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _kill(cloud_env, "net-2")
    path = tmp_path / "snap.json"
    assert main(["snapshot", "save", str(path)]) == 0
    monkeypatch.setenv("OS_CLOUD", "no-such-cloud")
    capsys.readouterr()
    assert main(["plan", "evacuate", "net-2", "--snapshot", str(path), "-f", "json"]) == 0
    plan = _json(capsys)
    snap = _snapshot()
    assert plan["move_count"] == len(snap.bindings_of_agent(_agent_id(snap, "net-2"))) + sum(
        1
        for b in snap.bindings_of_agent(_agent_id(snap, "net-2"))
        if snap.routers_by_id[b.router_id].ha
    )
    assert main(["plan", "rebalance", "--snapshot", str(tmp_path / "missing.json")]) == 2


def test_check_history_and_repair_after_evacuation(
    cloud_env: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--imbalance-threshold", "200"]) == 0
    _kill(cloud_env, "net-5")
    assert main(["check"]) == 2
    assert "dead agent net-5" in capsys.readouterr().out
    assert main(["evacuate", "net-5", "--port-timeout", "20"]) == 0
    capsys.readouterr()
    assert main(["history", "-f", "json"]) == 0
    operations = _json(capsys)
    assert isinstance(operations, list)
    (evacuation,) = [op for op in operations if op["what"] == "evacuate"]
    assert evacuation["subject"] == "net-5" and evacuation["outcome"] == "done"
    assert main(["history", "--moves", "-f", "json"]) == 0
    rows = _json(capsys)
    assert isinstance(rows, list) and len(rows) == evacuation["moves"] > 0
    assert {r["kind"] for r in rows} == {"evacuate"}
    assert main(["repair", "--dry-run"]) == 0
    assert "0 move(s)" in capsys.readouterr().out


def test_dry_run_changes_nothing_and_creates_no_journal(
    cloud_env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _kill(cloud_env, "net-1")
    before = _snapshot()
    assert main(["evacuate", "net-1", "--dry-run"]) == 0
    assert "move(s)" in capsys.readouterr().out
    assert set(_snapshot().bindings) == set(before.bindings)
    assert not (tmp_path / "state").exists()


def test_any_command_notices_an_interrupted_operation_and_repair_finishes_it(
    cloud_env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = _snapshot()
    binding = next(b for b in snap.bindings if not snap.routers_by_id[b.router_id].ha)
    target = next(a.id for a in snap.agents if a.id != binding.agent_id)
    crashed = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from l3ha.journal import Journal, MoveStep\n"
        "from l3ha.model import Move, MoveKind\n"
        "j = Journal(Path(sys.argv[1]))\n"
        "move = Move(sys.argv[2], MoveKind.MOVE, target=sys.argv[4], source=sys.argv[3])\n"
        "op, (m,) = j.begin_operation('migrate', {}, [move])\n"
        "j.record_step(m, MoveStep.INTENT, target=sys.argv[4])\n"
        "os._exit(9)  # dies like kill -9: the operation is never finished\n"
    )
    state = str(tmp_path / "state")
    args = [state, binding.router_id, binding.agent_id, target]
    proc = subprocess.run([sys.executable, "-c", crashed, *args], check=False)
    assert proc.returncode == 9

    assert main(["agent", "list", "-c", "host"]) == 0
    err = capsys.readouterr().err
    assert "operation 1 (migrate" in err and "was interrupted" in err and "l3ha repair" in err

    assert main(["repair", "--port-timeout", "20"]) == 0
    assert "finishing it" in capsys.readouterr().err
    assert _snapshot().bindings_of_router(binding.router_id)  # still hosted
    assert main(["agent", "list", "-c", "host"]) == 0
    assert "interrupted" not in capsys.readouterr().err


def test_drain_leaves_the_agent_enabled_when_routers_cannot_move(
    cloud_env: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["drain", "net-2", "--max-routers-per-agent", "1", "--port-timeout", "20"]) == 1
    err = capsys.readouterr().err
    assert "could not be placed" in err and "left enabled" in err
    agent = _snapshot().find_agent("net-2")
    assert agent.admin_state_up
    assert _snapshot().bindings_of_agent(agent.id)


def test_unplaceable_routers_make_an_evacuation_exit_1(
    cloud_env: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    _kill(cloud_env, "net-3")
    assert main(["evacuate", "net-3", "--to", "net-4", "--max-routers-per-agent", "10"]) == 1
    assert "could not be placed" in capsys.readouterr().err


def test_evacuating_routers_the_agent_does_not_host_is_bad_input(
    cloud_env: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    _kill(cloud_env, "net-1")
    snap = _snapshot()
    other = next(
        b.router_id
        for b in snap.bindings_of_agent(_agent_id(snap, "net-2"))
        if not snap.routers_by_id[b.router_id].ha
    )
    assert main(["evacuate", "net-1", "--router", other]) == 2
    assert "not hosted by net-1" in capsys.readouterr().err
    assert set(_snapshot().bindings) == set(snap.bindings)


def test_skipped_unknown_routers_are_reported(
    cloud_env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = _snapshot()
    router = next(r for r in snap.routers if not r.ha)
    args = ["migrate", router.id, "ghost-router", "--skip-unknown", "--dry-run"]
    assert main(args) == 0
    assert "skipped 1 unknown router(s): ghost-router" in capsys.readouterr().out


def test_every_action_refuses_while_most_agents_look_dead(
    cloud_env: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    cloud_env.faults.broker_outage(30)
    wait_for(lambda: not any(a.alive for a in _snapshot().agents))
    before = set(_snapshot().bindings)
    for argv in (["evacuate", "net-1"], ["repair"], ["rebalance"], ["drain", "net-2"]):
        assert main(argv) == 3, argv
        assert "suspect the control plane" in capsys.readouterr().err
    assert set(_snapshot().bindings) == before


def test_repair_finishes_an_interrupted_evacuation(
    cloud_env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _kill(cloud_env, "net-2")
    snap = _snapshot()
    dead = _agent_id(snap, "net-2")
    first = next(b.router_id for b in snap.bindings_of_agent(dead))
    target = _agent_id(snap, "net-3")
    crashed = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from l3ha.journal import Journal, MoveStep\n"
        "from l3ha.model import Move, MoveKind\n"
        "j = Journal(Path(sys.argv[1]))\n"
        "move = Move(sys.argv[2], MoveKind.MOVE, target=sys.argv[4], source=sys.argv[3])\n"
        "op, (m,) = j.begin_operation('evacuate', {'agent': 'net-2'}, [move])\n"
        "j.record_step(m, MoveStep.INTENT, target=sys.argv[4])\n"
        "os._exit(9)\n"
    )
    args = [str(tmp_path / "state"), first, dead, target]
    assert subprocess.run([sys.executable, "-c", crashed, *args], check=False).returncode == 9

    assert main(["repair", "--port-timeout", "20"]) == 0
    assert "finishing the evacuate of net-2" in capsys.readouterr().err
    after = _snapshot()
    assert after.bindings_of_agent(dead) == ()
    assert after.unhosted_routers() == ()
