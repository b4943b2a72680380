"""The pure evacuate planner for OVN gateway chassis."""

from __future__ import annotations

from l3ha.model import Agent, Router
from l3ha.ovn_model import GatewayBinding, OvnSnapshot
from l3ha.planner.gateway import GatewayMoveKind, bottom_priority, plan_evacuate


def world(groups: dict[str, dict[str, int]], dead: set[str], azs: dict[str, str]) -> OvnSnapshot:
    chassis = tuple(
        Agent(id=c, host=f"host-{c}", availability_zone=az, alive=c not in dead)
        for c, az in azs.items()
    )
    routers = tuple(Router(id=r) for r in groups)
    bindings = tuple(
        GatewayBinding(r, c, p) for r, group in groups.items() for c, p in group.items()
    )
    return OvnSnapshot(chassis, routers, bindings)


AZS = {"a": "az1", "b": "az1", "c": "az2", "d": "az2"}


def test_a_router_left_with_one_live_chassis_gets_a_replacement_at_the_bottom() -> None:
    snap = world({"r1": {"a": 3, "b": 2}}, {"a"}, AZS)
    (move,) = plan_evacuate(snap, "a", 2).moves
    assert move.kind is GatewayMoveKind.REPLACE
    assert (move.source, move.priority) == ("a", 1)
    assert move.target == "c"  # az2: the group's live chassis (b) covers az1 only; then by name


def test_a_router_with_enough_live_chassis_only_loses_the_dead_one() -> None:
    snap = world({"r1": {"a": 3, "b": 2, "c": 1}}, {"a"}, AZS)
    (move,) = plan_evacuate(snap, "a", 2).moves
    assert (move.kind, move.source, move.target) == (GatewayMoveKind.REMOVE, "a", None)


def test_replacements_spread_by_primaries_and_the_plans_own_additions() -> None:
    groups = {f"r{n}": {"a": 2, "b": 1} for n in range(4)}
    groups["x"] = {"c": 2, "a": 1}  # c is primary of one router
    snap = world(groups, {"a"}, {"a": "az1", "b": "az1", "c": "az1", "d": "az1"})
    targets = [m.target for m in plan_evacuate(snap, "a", 2).moves if m.router_id != "x"]
    # d has no primary, c has one; each addition counts against its chassis
    assert targets == ["d", "c", "d", "c"]


def test_no_live_chassis_outside_the_group_is_a_warning_and_a_removal() -> None:
    snap = world({"r1": {"a": 2, "b": 1}}, {"a"}, {"a": "az1", "b": "az1"})
    plan = plan_evacuate(snap, "a", 2)
    assert [m.kind for m in plan.moves] == [GatewayMoveKind.REMOVE]
    assert "no live gateway chassis" in plan.warnings[0]


def test_routers_without_the_chassis_are_untouched() -> None:
    snap = world({"r1": {"b": 2, "c": 1}, "r2": {"a": 2, "b": 1}}, {"a"}, AZS)
    assert [m.router_id for m in plan_evacuate(snap, "a", 2).moves] == ["r2"]


def test_bottom_priority_goes_below_the_group_else_takes_a_free_slot() -> None:
    assert bottom_priority({3, 2}) == 1
    assert bottom_priority(set()) == 32767
    assert bottom_priority({0, 2}) == 1


def test_a_router_an_interrupted_run_left_short_is_topped_up_at_the_bottom() -> None:
    snap = world({"r1": {"b": 2}, "r2": {"b": 2, "c": 1}}, {"a"}, AZS)
    (move,) = plan_evacuate(snap, "a", 2, short=frozenset({"r1", "r2"})).moves
    assert (move.router_id, move.kind, move.source) == ("r1", GatewayMoveKind.ADD, None)
    assert (move.target, move.priority) == ("d", 1)  # az2, and in no group yet (c is in r2)
