"""Evacuate and drain: canary order, busy spread, HA replica replacement, DVR, halts."""

from __future__ import annotations

import pytest

from l3ha.errors import NotFoundError
from l3ha.model import AgentMode, Halt, HaltReason, MoveKind
from l3ha.planner import PlacementPolicy, apply_plan, plan_drain, plan_evacuate

from .helpers import (
    POLICY,
    WEIGHTS,
    agent,
    as_plan,
    busy_counts,
    counts,
    many,
    router,
    snapshot,
    targets_of,
)


def dead_and_three() -> list:
    return [agent("dead", alive=False), agent("a1"), agent("a2"), agent("a3")]


def test_canary_is_quietest_then_busy_early_then_rest() -> None:
    routers = [
        router("r-heavy", weight=5),
        router("r-q1"),
        router("r-q2"),
        router("r-busy1", busy=True),
        router("r-q3"),
        router("r-busy2", busy=True),
        router("r-w2", weight=2),
    ]
    snap = snapshot(dead_and_three(), routers, {r.id: "dead" for r in routers})
    plan = as_plan(plan_evacuate(snap, "dead", POLICY, WEIGHTS))
    order = [m.router_id for m in plan.moves]
    assert order[:3] == ["r-q1", "r-q2", "r-q3"]
    assert plan.canary == 3
    assert order[3:5] == ["r-busy1", "r-busy2"]
    assert order[5:] == ["r-heavy", "r-w2"]
    assert all(m.kind == MoveKind.MOVE and m.source == "dead" for m in plan.moves)
    assert "canary" in plan.moves[0].reason and "busy" in plan.moves[3].reason


def test_canary_size_is_a_policy() -> None:
    routers = many("r", 6)
    snap = snapshot(dead_and_three(), routers, {r.id: "dead" for r in routers})
    plan = as_plan(plan_evacuate(snap, "dead", PlacementPolicy(canary_size=1), WEIGHTS))
    assert plan.canary == 1
    plan = as_plan(plan_evacuate(snap, "dead", PlacementPolicy(canary_size=0), WEIGHTS))
    assert plan.canary == 0


def test_busy_routers_spread_before_any_agent_gets_a_second() -> None:
    routers = many("busy", 6, busy=True) + many("quiet", 30)
    snap = snapshot(dead_and_three(), routers, {r.id: "dead" for r in routers})
    after = apply_plan(snap, as_plan(plan_evacuate(snap, "dead", POLICY, WEIGHTS)))
    assert [busy_counts(after)[a] for a in ("a1", "a2", "a3")] == [2, 2, 2]
    live = [counts(after)[a] for a in ("a1", "a2", "a3")]
    assert max(live) - min(live) <= 1 + WEIGHTS.busy_weight  # load counts weight
    assert counts(after)["dead"] == 0


def test_busy_router_avoids_agent_already_holding_busy_ones() -> None:
    fillers = many("f", 27)
    placement = {f.id: ("a2" if i < 15 else "a3") for i, f in enumerate(fillers)}
    snap = snapshot(
        dead_and_three(),
        [router("old-busy", busy=True), router("new-busy", busy=True), *fillers],
        {"old-busy": "a1", "new-busy": "dead", **placement},
    )
    plan = as_plan(plan_evacuate(snap, "dead", POLICY, WEIGHTS))
    # by weight alone a1 (10) beats a3 (12) and a2 (15); busy spread wins
    assert targets_of(plan) == {"new-busy": "a3"}


def test_each_placement_counts_what_was_placed_before() -> None:
    routers = many("r", 9)
    snap = snapshot(dead_and_three(), routers, {r.id: "dead" for r in routers})
    plan = as_plan(plan_evacuate(snap, "dead", POLICY, WEIGHTS))
    after = counts(apply_plan(snap, plan))
    assert (after["a1"], after["a2"], after["a3"]) == (3, 3, 3)


def test_only_listed_routers_and_unknown_ids_reported() -> None:
    routers = many("r", 4)
    snap = snapshot(dead_and_three(), routers, {r.id: "dead" for r in routers})
    plan = as_plan(
        plan_evacuate(snap, "dead", POLICY, WEIGHTS, router_ids=["r-001", "nope", "r-001"])
    )
    assert [m.router_id for m in plan.moves] == ["r-001"]
    assert [(u.router_id, u.reason) for u in plan.unplaceable] == [("nope", "unknown router id")]


def test_router_not_on_source_is_reported() -> None:
    snap = snapshot(dead_and_three(), [router("x")], {"x": "a1"})
    plan = as_plan(plan_evacuate(snap, "dead", POLICY, WEIGHTS, router_ids=["x"]))
    assert plan.moves == ()
    assert "not hosted" in plan.unplaceable[0].reason


def test_ha_replica_replaced_in_another_az_not_moved() -> None:
    agents = [
        agent("dead", az="az1", alive=False),
        agent("keep", az="az2"),
        agent("same-az", az="az2"),
        agent("other-az", az="az3"),
    ]
    snap = snapshot(
        agents,
        [router("ha", ha=True), *many("load", 5)],
        {"ha": ["dead", "keep"], **{f"load-{i:03d}": "other-az" for i in range(5)}},
        active={"ha": "keep"},
    )
    plan = as_plan(plan_evacuate(snap, "dead", POLICY, WEIGHTS))
    kinds = [(m.kind, m.target, m.source) for m in plan.moves if m.router_id == "ha"]
    assert kinds == [
        (MoveKind.ADD_REPLICA, "other-az", "dead"),
        (MoveKind.REMOVE_REPLICA, None, "dead"),
    ]
    # other-az carries more load than same-az: AZ diversity came first
    # the live (active) replica is never touched
    assert all(m.source != "keep" and m.target != "keep" for m in plan.moves)


def test_ha_replica_never_doubles_on_one_agent() -> None:
    agents = [agent("dead", alive=False), agent("a1"), agent("a2")]
    snap = snapshot(agents, [router("ha", ha=True)], {"ha": ["dead", "a1", "a2"]})
    plan = as_plan(plan_evacuate(snap, "dead", POLICY, WEIGHTS))
    assert plan.moves == ()
    assert [u.router_id for u in plan.unplaceable] == ["ha"]
    assert "already hosting" in plan.unplaceable[0].reason


def test_a_drain_drops_the_surplus_replica_an_interrupted_replacement_left() -> None:
    agents = [agent("old"), agent("a1"), agent("a2")]
    snap = snapshot(agents, [router("ha", ha=True)], {"ha": ["old", "a1", "a2"]})
    plan = as_plan(plan_drain(snap, "old", POLICY, WEIGHTS))
    assert [(m.kind, m.source) for m in plan.moves] == [(MoveKind.REMOVE_REPLICA, "old")]
    assert "already has replicas on" in plan.moves[0].reason
    assert plan.unplaceable == ()


def test_a_drain_never_drops_a_replica_it_cannot_replace() -> None:
    agents = [agent("old"), agent("a1"), agent("a2", up=False)]
    snap = snapshot(agents, [router("ha", ha=True)], {"ha": ["old", "a1", "a2"]})
    plan = as_plan(plan_drain(snap, "old", POLICY, WEIGHTS))
    assert plan.moves == ()
    assert [u.router_id for u in plan.unplaceable] == ["ha"]


def test_dvr_snat_moves_only_to_dvr_snat_agents() -> None:
    agents = [
        agent("dead", mode=AgentMode.DVR_SNAT, alive=False),
        agent("legacy"),
        agent("compute", mode=AgentMode.DVR),
        agent("noext", mode=AgentMode.DVR_NO_EXTERNAL),
        agent("snat2", mode=AgentMode.DVR_SNAT),
    ]
    snap = snapshot(
        agents,
        [router("dvr", dvr=True), router("leg")],
        {"dvr": ["dead", "compute"], "leg": "dead"},
    )
    plan = as_plan(plan_evacuate(snap, "dead", POLICY, WEIGHTS))
    assert targets_of(plan)["dvr"] == "snat2"
    assert targets_of(plan)["leg"] in {"legacy", "snat2"}
    after = apply_plan(snap, plan)
    assert {b.agent_id for b in after.bindings_of_router("dvr")} == {"snat2", "compute"}


def test_dvr_agent_routers_reported_not_moved() -> None:
    agents = [
        agent("compute", mode=AgentMode.DVR, alive=False),
        agent("snat", mode=AgentMode.DVR_SNAT),
    ]
    snap = snapshot(agents, [router("dvr", dvr=True)], {"dvr": ["compute", "snat"]})
    plan = as_plan(plan_evacuate(snap, "compute", POLICY, WEIGHTS))
    assert plan.moves == ()
    assert "compute ports" in plan.unplaceable[0].reason


def test_no_target_at_all_halts() -> None:
    agents = [agent("dead", alive=False), agent("off", up=False), agent("gone", alive=False)]
    snap = snapshot(agents, many("r", 3), {f"r-{i:03d}": "dead" for i in range(3)})
    result = plan_evacuate(snap, "dead", POLICY, WEIGHTS)
    assert isinstance(result, Halt)
    assert result.reason == HaltReason.NO_TARGETS
    assert result.evidence["routers"] == 3


def test_unknown_source_and_unknown_target_are_user_errors() -> None:
    snap = snapshot(dead_and_three(), [], {})
    with pytest.raises(NotFoundError):
        plan_evacuate(snap, "missing", POLICY, WEIGHTS)
    with pytest.raises(NotFoundError, match="zzz"):
        plan_evacuate(snap, "dead", PlacementPolicy(allowed_targets=frozenset({"zzz"})), WEIGHTS)


def test_to_restricts_targets() -> None:
    routers = many("r", 4)
    snap = snapshot(dead_and_three(), routers, {r.id: "dead" for r in routers})
    policy = PlacementPolicy(allowed_targets=frozenset({"a3"}))
    plan = as_plan(plan_evacuate(snap, "dead", policy, WEIGHTS))
    assert set(targets_of(plan).values()) == {"a3"}


def test_drain_replaces_ha_make_before_break_and_warns_about_active() -> None:
    agents = [agent("drain", az="az1"), agent("b", az="az2"), agent("c", az="az3")]
    snap = snapshot(
        agents,
        [router("ha", ha=True), router("leg")],
        {"ha": ["drain", "b"], "leg": "drain"},
        active={"ha": "drain"},
    )
    plan = as_plan(plan_drain(snap, "drain", POLICY, WEIGHTS))
    assert plan.action == "drain"
    ha = [m for m in plan.moves if m.router_id == "ha"]
    assert [m.kind for m in ha] == [MoveKind.ADD_REPLICA, MoveKind.REMOVE_REPLICA]
    assert ha[0].target == "c"
    assert any("fail over" in w for w in plan.warnings)
    after = apply_plan(snap, plan)
    assert after.bindings_of_agent("drain") == ()


def test_source_state_mismatch_is_warned() -> None:
    snap = snapshot([agent("live"), agent("other")], [router("r")], {"r": "live"})
    plan = as_plan(plan_evacuate(snap, "live", POLICY, WEIGHTS))
    assert any("alive and enabled" in w for w in plan.warnings)
    snap = snapshot([agent("gone", alive=False), agent("other")], [router("r")], {"r": "gone"})
    plan = as_plan(plan_drain(snap, "gone", POLICY, WEIGHTS))
    assert any("is dead" in w for w in plan.warnings)
