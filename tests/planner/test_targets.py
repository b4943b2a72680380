"""Target rules shared by every plan: AZ hints, strict AZ, prefer/avoid tags, capacity."""

from __future__ import annotations

import pytest

from l3ha.errors import BadInputError
from l3ha.planner import PlacementPolicy, plan_evacuate, plan_migrate

from .helpers import POLICY, WEIGHTS, agent, as_plan, many, router, snapshot, targets_of


def zones():  # type: ignore[no-untyped-def]
    return [
        agent("dead", az="az1", alive=False),
        agent("b1", az="az2"),
        agent("b2", az="az2"),
        agent("c1", az="az3"),
    ]


def evacuate_one(r, policy=POLICY, agents=None, extra=None):  # type: ignore[no-untyped-def]
    extra = extra or {}
    routers = [r, *(router(rid) for rid in extra)]
    snap = snapshot(agents or zones(), routers, {r.id: "dead", **extra})
    return as_plan(plan_evacuate(snap, "dead", policy, WEIGHTS))


def test_az_hint_honoured_even_against_load() -> None:
    load = {f"x{i}": "c1" for i in range(0)} | {f"y{i}": "b1" for i in range(3)}
    load |= {f"z{i}": "b2" for i in range(3)}
    plan = evacuate_one(router("r", hints=("az2",)), extra=load)
    assert targets_of(plan)["r"] in {"b1", "b2"}  # c1 is empty but not hinted
    assert plan.warnings == ()


def test_az_hint_without_eligible_agent_falls_back_with_warning() -> None:
    plan = evacuate_one(router("r", hints=("az9",)))
    assert "r" in targets_of(plan)
    assert any("az9" in w and "placed on" in w for w in plan.warnings)


def test_strict_az_refuses() -> None:
    plan = evacuate_one(router("r", hints=("az9",)), PlacementPolicy(strict_az=True))
    assert plan.moves == ()
    assert plan.unplaceable[0].router_id == "r"
    assert "strict AZ" in plan.unplaceable[0].reason


def test_hinted_agent_dead_counts_as_not_eligible() -> None:
    # az1 is hinted but its only agent is the dead source: place elsewhere, warn
    plan = evacuate_one(router("r", hints=("az1",)))
    assert targets_of(plan)["r"] in {"b1", "b2", "c1"}
    assert plan.warnings


def test_prefer_tag_wins_over_load() -> None:
    load = {f"y{i}": "c1" for i in range(5)}
    plan = evacuate_one(router("r", tags=("l3ha:prefer=host-c1",)), extra=load)
    assert targets_of(plan)["r"] == "c1"


def test_prefer_tag_is_soft() -> None:
    plan = evacuate_one(router("r", tags=("l3ha:prefer=host-nowhere,host-dead",)))
    assert targets_of(plan)["r"] in {"b1", "b2", "c1"}


def test_avoid_tag_is_hard_by_host_or_id() -> None:
    plan = evacuate_one(router("r", tags=("l3ha:avoid=host-b1,b2", "l3ha:avoid=c1")))
    assert plan.moves == ()
    assert "avoided by tag" in plan.unplaceable[0].reason


def test_router_capacity() -> None:
    agents = [agent("dead", alive=False), agent("a"), agent("b")]
    routers = many("r", 5)
    snap = snapshot(agents, routers, {r.id: "dead" for r in routers})
    plan = as_plan(plan_evacuate(snap, "dead", PlacementPolicy(max_routers_per_agent=2), WEIGHTS))
    assert len(plan.moves) == 4
    assert len(plan.unplaceable) == 1
    assert "at capacity" in plan.unplaceable[0].reason


def test_weight_capacity() -> None:
    agents = [agent("dead", alive=False), agent("a"), agent("b")]
    routers = [router("big", weight=8), router("small", weight=2), router("mid", weight=5)]
    snap = snapshot(agents, routers, {r.id: "dead" for r in routers})
    policy = PlacementPolicy(max_weight_per_agent=7)
    plan = as_plan(plan_evacuate(snap, "dead", policy, WEIGHTS))
    assert [u.router_id for u in plan.unplaceable] == ["big"]
    assert sorted(targets_of(plan).values()) == ["a", "b"]


def test_negative_limits_are_bad_input() -> None:
    with pytest.raises(BadInputError):
        PlacementPolicy(max_routers_per_agent=-1)
    with pytest.raises(BadInputError):
        PlacementPolicy(canary_size=-2)


def test_migrate_moves_off_current_agent_to_best_target() -> None:
    agents = [agent("a"), agent("b"), agent("c")]
    snap = snapshot(
        agents,
        [router("r"), router("busy", busy=True), *many("f", 2)],
        {"r": "a", "busy": "b", "f-000": "c", "f-001": "c"},
    )
    plan = as_plan(plan_migrate(snap, ["r", "r", "ghost"], POLICY, WEIGHTS))
    assert [u.router_id for u in plan.unplaceable] == ["ghost"]
    # weight: b holds a busy router (10), c two quiet ones (2): c is lighter
    assert targets_of(plan) == {"r": "c"}


def test_migrate_with_to_and_unhosted_router() -> None:
    agents = [agent("a"), agent("b"), agent("c")]
    snap = snapshot(agents, [router("r"), router("loose")], {"r": "a"})
    policy = PlacementPolicy(allowed_targets=frozenset({"c"}))
    plan = as_plan(plan_migrate(snap, ["r", "loose"], policy, WEIGHTS))
    assert targets_of(plan) == {"r": "c", "loose": "c"}
    assert {m.router_id: m.kind.value for m in plan.moves} == {"r": "move", "loose": "bind"}


def test_migrate_ha_replaces_a_standby_never_the_active() -> None:
    agents = [agent("a", az="z1"), agent("b", az="z2"), agent("c", az="z3")]
    snap = snapshot(agents, [router("ha", ha=True)], {"ha": ["a", "b"]}, active={"ha": "a"})
    plan = as_plan(plan_migrate(snap, ["ha"], POLICY, WEIGHTS))
    assert [(m.kind.value, m.target, m.source) for m in plan.moves] == [
        ("add_replica", "c", "b"),
        ("remove_replica", None, "b"),
    ]
