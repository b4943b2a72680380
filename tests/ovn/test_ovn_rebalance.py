"""``l3ha rebalance`` on the emulator's ML2/OVN mode, and its pure planner: a skewed cloud
is balanced with the fewest moves (each one graceful priority change, about 1 s dark),
a balanced one moves nothing, busy routers spread apart, a dead chassis is never a target,
a dry run writes nothing, bad input is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from l3ha.cli.main import main
from l3ha.cloud.adapter import connect
from l3ha.cloud.ovn import NeutronOvn
from l3ha.emulator import CLOUD_NAME as CLOUD
from l3ha.emulator import Emulator
from l3ha.emulator.ovn_world import MoveKind
from l3ha.model import Agent, Router
from l3ha.ovn_model import GatewayBinding, OvnSnapshot
from l3ha.planner.gateway import GatewayMoveKind
from l3ha.planner.gateway_balance import plan_gateway_rebalance
from l3ha.weights import WeightPolicy


def ovn() -> NeutronOvn:
    return NeutronOvn(connect(cloud=CLOUD))


def primaries(emu: Emulator) -> dict[str, int]:
    assert emu.ovn is not None
    counts = {name: 0 for name in emu.ovn.ovn.chassis}
    for gateway in emu.ovn.ovn.gateways.values():
        if gateway.bound is not None:
            counts[gateway.bound] += 1
    return counts


def skew_onto(emu: Emulator, chassis: str, routers: list[str] | None = None) -> list[str]:
    """Raise ``chassis`` to the top of the routers' groups through the API (all by
    default); the routers whose primary moved."""
    cloud = ovn()
    world = cloud.read_ovn_snapshot()
    moved = []
    for router in routers or sorted(r.id for r in world.routers):
        if world.primary(router) == chassis:
            continue
        top = max(b.priority for b in world.group(router)) + 1
        cloud.set_priority(router, chassis, top)
        moved.append(router)
    emu.advance(3.0)
    return moved


def outage_counts(emu: Emulator) -> dict[str, int]:
    assert emu.ovn is not None
    return {rid: len(g.outages) for rid, g in emu.ovn.ovn.gateways.items()}


def rebalance(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    code = main(["rebalance", "-f", "json", *args])
    out, err = capsys.readouterr()
    doc: dict[str, Any] = json.loads(out) if out.strip() else {}
    return code, doc, err


def test_a_skewed_cloud_is_balanced_with_the_fewest_graceful_moves(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    skew_onto(emulator, "gw-1")
    assert primaries(emulator) == {"gw-1": 6, "gw-2": 0, "gw-3": 0}
    before = outage_counts(emulator)
    code, doc, err = rebalance(capsys, "--state-dir", str(tmp_path))
    assert code == 0, err
    assert doc["counts"]["moved"] == 4 == doc["lower_bound"]
    assert doc["moves"][0]["kind"] == "gateway_raise"
    emulator.advance(3.0)
    assert primaries(emulator) == {"gw-1": 2, "gw-2": 2, "gw-3": 2}
    assert emulator.ovn is not None
    for move in doc["moves"]:
        gateway = emulator.ovn.ovn.gateways[move["router"]]
        (outage,) = gateway.outages[before[move["router"]] :]  # moved once, gracefully
        assert outage.kind == MoveKind.GRACEFUL
        assert outage.end - outage.start == pytest.approx(1.0, abs=0.06)
    code, doc, _ = rebalance(capsys, "--state-dir", str(tmp_path))
    assert (code, doc["counts"]["moved"], doc["lower_bound"]) == (0, 0, 0)


def test_a_balanced_cloud_moves_nothing(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    before = outage_counts(emulator)
    code = main(["rebalance", "--state-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert "0 move(s); lower bound 0" in out
    assert "gw-1 2 -> 2, gw-2 2 -> 2, gw-3 2 -> 2" in out
    emulator.advance(3.0)
    assert outage_counts(emulator) == before


def test_busy_routers_spread_apart(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    routers = sorted(r.id for r in ovn().read_ovn_snapshot().routers)
    busy = routers[:3]
    skew_onto(emulator, "gw-1", busy)  # gw-1 holds every busy router (and others)
    weights = tmp_path / "weights.json"
    weights.write_text(json.dumps(dict.fromkeys(busy, 10)))
    code, doc, err = rebalance(capsys, "--state-dir", str(tmp_path), "--weights", str(weights))
    assert code == 0, err
    assert doc["counts"]["moved"] == doc["lower_bound"]
    emulator.advance(3.0)
    world = ovn().read_ovn_snapshot()
    assert sorted(world.primary(r) or "" for r in busy) == ["gw-1", "gw-2", "gw-3"]
    assert sorted(primaries(emulator).values()) == [2, 2, 2]


def test_a_dead_chassis_is_never_a_target(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    emulator.faults.kill_chassis("gw-3")
    for _ in range(4):
        emulator.advance(1.1)
        ovn().list_chassis()  # Neutron judges liveness when listing
    skew_onto(emulator, "gw-1")
    code, doc, err = rebalance(capsys, "--state-dir", str(tmp_path))
    assert code == 0, err
    assert doc["counts"]["moved"] == 3
    assert {m["target"] for m in doc["moves"]} == {"gw-2"}
    emulator.advance(3.0)
    assert primaries(emulator) == {"gw-1": 3, "gw-2": 3, "gw-3": 0}


def test_a_dry_run_writes_nothing(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    skew_onto(emulator, "gw-1")
    before = ovn().read_ovn_snapshot().bindings
    code, doc, err = rebalance(capsys, "--dry-run", "--state-dir", str(tmp_path))
    assert code == 0, err
    assert doc["counts"]["planned"] == 4
    assert doc["primaries"] == {"gw-1": [6, 2], "gw-2": [0, 2], "gw-3": [0, 2]}
    emulator.advance(3.0)
    assert sorted(ovn().read_ovn_snapshot().bindings, key=repr) == sorted(before, key=repr)
    assert not (tmp_path / "journal.sqlite").exists()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--to", "gw-2"], "--to is for L3 agents"),
        (["--max-routers-per-agent", "3"], "--max-routers-per-agent is for L3 agents"),
        (["--max-moves", "0"], "--max-moves"),
        (["--busy-fips", "x"], "--busy-fips"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    emulator: Emulator,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    args: list[str],
    words: str,
) -> None:
    skew_onto(emulator, "gw-1")
    before = ovn().read_ovn_snapshot().bindings
    try:
        code: object = main(["rebalance", "--state-dir", str(tmp_path), *args])
    except SystemExit as exited:  # argparse's own refusal
        code = exited.code
    err = capsys.readouterr().err
    assert code == 2
    assert words in err and len(err.strip().splitlines()) <= 2  # usage line + the error
    assert sorted(ovn().read_ovn_snapshot().bindings, key=repr) == sorted(before, key=repr)


def world(groups: dict[str, dict[str, int]], dead: frozenset[str] = frozenset()) -> OvnSnapshot:
    names = sorted({c for g in groups.values() for c in g})
    chassis = tuple(Agent(id=c, host=c, alive=c not in dead) for c in names)
    return OvnSnapshot(
        chassis,
        tuple(Router(id=r) for r in groups),
        tuple(GatewayBinding(r, c, p) for r, g in groups.items() for c, p in g.items()),
    )


def test_the_plan_meets_the_lower_bound_busy_first_and_the_canary_is_quiet() -> None:
    groups = {f"r{n:02}": {"a": 3, "b": 2, "c": 1} for n in range(12)}
    busy = {"r00", "r01", "r02"}
    weights = WeightPolicy(overrides=dict.fromkeys(busy, 10))
    plan = plan_gateway_rebalance(world(groups), weights)
    assert len(plan.moves) == plan.lower_bound == 8
    assert all(m.kind is GatewayMoveKind.RAISE and m.priority == 4 for m in plan.moves)
    assert plan.moves[0].router_id not in busy  # the canary
    on = {c: 0 for c in "abc"}
    busy_on = {c: 0 for c in "abc"}
    target = {m.router_id: m.target or "" for m in plan.moves}
    for router in groups:
        chassis = target.get(router, "a")
        on[chassis] += 1
        busy_on[chassis] += router in busy
    assert on == {"a": 4, "b": 4, "c": 4} and busy_on == {"a": 1, "b": 1, "c": 1}


def test_a_drained_chassis_is_no_target_and_max_moves_cuts_the_plan() -> None:
    groups = {f"r{n}": {"a": 3, "b": 2, "c": 1} for n in range(6)}
    plan = plan_gateway_rebalance(world(groups), WeightPolicy(), frozenset({"c"}))
    assert [m.target for m in plan.moves] == ["b"] * 3
    cut = plan_gateway_rebalance(world(groups), WeightPolicy(), max_moves=2)
    assert len(cut.moves) == 2 and cut.lower_bound == 4
    assert any("--max-moves 2" in w for w in cut.warnings)
