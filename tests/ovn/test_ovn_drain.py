"""``l3ha drain CHASSIS`` on the emulator's ML2/OVN mode: each primary moves once, by a
graceful priority change (the emulator's 1.0 s outage, not a crash failover's 3.5 s),
the chassis ends at the bottom of every group; the gates and the planner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from l3ha.cli.main import main
from l3ha.emulator import Emulator
from l3ha.emulator.ovn_world import MoveKind, Outage
from l3ha.model import Agent, Router
from l3ha.ovn_model import GatewayBinding, OvnSnapshot
from l3ha.planner.gateway import GatewayMoveKind, plan_drain


def outages(emu: Emulator) -> dict[str, list[Outage]]:
    assert emu.ovn is not None
    return {rid: list(g.outages) for rid, g in emu.ovn.ovn.gateways.items()}


def primaries(emu: Emulator, chassis: str) -> set[str]:
    assert emu.ovn is not None
    return {rid for rid, g in emu.ovn.ovn.gateways.items() if g.bound == chassis}


def test_a_drain_moves_each_primary_once_gracefully_and_lowers_the_chassis(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    victims = primaries(emulator, "gw-1")
    assert victims
    before = outages(emulator)
    code = main(["drain", "gw-1", "--state-dir", str(tmp_path), "-f", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    counts = json.loads(out)["counts"]
    assert counts["moved"] == len(victims) and counts["lowered"] == 6 - len(victims)
    emulator.advance(3.0)
    assert primaries(emulator, "gw-1") == set()
    assert emulator.ovn is not None
    for rid, gateway in emulator.ovn.ovn.gateways.items():
        assert gateway.priorities["gw-1"] < min(
            p for c, p in gateway.priorities.items() if c != "gw-1"
        )
        new = outages(emulator)[rid][len(before[rid]) :]
        if rid in victims:
            (outage,) = new  # one move, graceful: about 1 s dark
            assert outage.kind == MoveKind.GRACEFUL
            assert outage.end - outage.start == pytest.approx(1.0, abs=0.06)
        else:
            assert new == []  # lowering a standby moves nothing


def test_a_second_drain_targets_no_drained_chassis_and_asks_no_taken_priority(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """gw-1 drained (journal mark) is no target of gw-2's drain; gw-1 holds priority 0, so
    where gw-2 holds 1 nothing free lies below: gw-2 stays there (not the primary) instead
    of asking for its own priority (Neutron's 409)."""
    assert main(["drain", "gw-1", "--state-dir", str(tmp_path)]) == 0
    emulator.advance(3.0)
    code = main(["drain", "gw-2", "--state-dir", str(tmp_path), "-f", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out[out.find("{") :])["counts"].get("failed", 0) == 0
    emulator.advance(3.0)
    assert primaries(emulator, "gw-1") == primaries(emulator, "gw-2") == set()
    assert emulator.ovn is not None
    for gateway in emulator.ovn.ovn.gateways.values():
        assert gateway.priorities["gw-3"] > max(gateway.priorities["gw-1"],
                                               gateway.priorities["gw-2"])  # fmt: skip


def test_a_crash_for_comparison_is_a_3_5_s_failover(emulator: Emulator) -> None:
    victims = primaries(emulator, "gw-1")
    emulator.faults.kill_chassis("gw-1")
    emulator.advance(5.0)
    for rid in victims:
        (outage,) = outages(emulator)[rid]
        assert outage.kind == MoveKind.FAILOVER
        assert outage.end - outage.start == pytest.approx(3.5, abs=0.06)


def test_a_dead_chassis_is_not_drained(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    emulator.faults.kill_chassis("gw-1")
    for _ in range(4):
        emulator.advance(1.1)
        main(["agent", "list", "-f", "json"])  # Neutron judges liveness when listing
    capsys.readouterr()
    code = main(["drain", "gw-1", "--state-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 3
    assert "use 'l3ha evacuate gw-1'" in err


def test_the_drain_plan_promotes_the_least_loaded_live_chassis_then_lowers_elsewhere() -> None:
    chassis = tuple(Agent(id=c, host=c, alive=c != "d") for c in "abcd")
    groups = {
        "r1": {"a": 3, "b": 2, "c": 1},
        "r2": {"a": 3, "c": 2, "b": 1},
        "r3": {"b": 2, "a": 1},
    }
    groups["r4"] = {"a": 2, "d": 3}  # d is dead: a is the primary, no other live chassis
    world = OvnSnapshot(
        chassis,
        tuple(Router(id=r) for r in groups),
        tuple(GatewayBinding(r, c, p) for r, g in groups.items() for c, p in g.items()),
    )
    plan = plan_drain(world, "a")
    kinds = [(m.router_id, m.kind, m.target, m.priority) for m in plan.moves]
    assert kinds == [
        ("r1", GatewayMoveKind.PROMOTE, "c", 4),  # c has no primary, b has r3
        ("r2", GatewayMoveKind.PROMOTE, "b", 4),  # c has one now (the plan's own)
        ("r3", GatewayMoveKind.DEMOTE, None, None),
    ]
    assert any("r4" in w and "no other live chassis" in w for w in plan.warnings)
