"""Evacuations place for recovery time: one plan's routers spread over the targets' queues.

An agent wires the routers it receives one after another, so an evacuation gives no
target more than ceil(k / n) of its k routers while another eligible one has room under
that cap; capacity, AZ, avoid tags and busy spreading still hold. A drain (live source)
keeps the balance-first placement.
"""

from __future__ import annotations

from collections import Counter

from l3ha.model import Plan, Router
from l3ha.planner import PlacementPolicy, apply_plan, plan_drain, plan_evacuate

from .helpers import WEIGHTS, agent, as_plan, busy_counts, counts, many, router, snapshot


def received(plan: Plan) -> Counter[str]:
    """How many of this plan's routers each target receives (its wiring queue)."""
    return Counter(m.target for m in plan.moves if m.target is not None)


def uneven_survivors(source_alive: bool = False) -> tuple[list, list[Router], dict[str, str]]:
    """7 routers on the source; survivors a1 nearly empty (1), a2 and a3 with 9 each."""
    agents = [agent("src", alive=source_alive), agent("a1"), agent("a2"), agent("a3")]
    moving = many("m", 7)
    fillers = many("f", 19)
    placement = {r.id: "src" for r in moving}
    placement |= {
        f.id: ("a1" if i == 0 else "a2" if i < 10 else "a3") for i, f in enumerate(fillers)
    }
    return agents, [*moving, *fillers], placement


def test_uneven_survivors_get_the_evacuation_spread_not_piled_on_the_emptiest() -> None:
    snap = snapshot(*uneven_survivors())
    plan = as_plan(plan_evacuate(snap, "src", PlacementPolicy(), WEIGHTS))
    queues = received(plan)
    assert sorted(queues.values(), reverse=True) == [3, 2, 2]
    assert queues["a1"] == 3  # below the cap, the balance order still favours the emptiest
    assert counts(apply_plan(snap, plan))["src"] == 0
    balance_first = PlacementPolicy(recovery_spread=False)  # the placement before issue 20
    assert received(as_plan(plan_evacuate(snap, "src", balance_first, WEIGHTS)))["a1"] == 7


def test_a_drain_keeps_the_balance_first_placement() -> None:
    snap = snapshot(*uneven_survivors(source_alive=True))
    plan = as_plan(plan_drain(snap, "src", PlacementPolicy(), WEIGHTS))
    assert received(plan)["a1"] == 7  # 1 + 7 = 8 still below a2's and a3's 9
    after = counts(apply_plan(snap, plan))
    assert (after["a1"], after["a2"], after["a3"]) == (8, 9, 9)


def test_spread_evenly_when_the_survivors_are_even() -> None:
    agents = [agent("src", alive=False), agent("a1"), agent("a2"), agent("a3")]
    moving = many("m", 9)
    snap = snapshot(agents, moving, {r.id: "src" for r in moving})
    plan = as_plan(plan_evacuate(snap, "src", PlacementPolicy(), WEIGHTS))
    assert received(plan) == Counter({"a1": 3, "a2": 3, "a3": 3})


def test_capacity_caps_win_over_the_spread() -> None:
    agents, routers, placement = uneven_survivors()
    snap = snapshot(agents, routers, placement)
    policy = PlacementPolicy(max_routers_per_agent=10)  # a2, a3 take 1 each; a1 the rest
    plan = as_plan(plan_evacuate(snap, "src", policy, WEIGHTS))
    assert received(plan) == Counter({"a1": 5, "a2": 1, "a3": 1})
    assert max(counts(apply_plan(snap, plan)).values()) <= 10
    assert plan.unplaceable == ()


def test_az_hints_win_over_the_spread() -> None:
    agents = [
        agent("src", az="az1", alive=False),
        agent("a1", az="az2"),
        agent("a2", az="az3"),
        agent("a3", az="az3"),
    ]
    moving = [router(f"m-{i}", hints=("az2",)) for i in range(6)]
    snap = snapshot(agents, moving, {r.id: "src" for r in moving})
    plan = as_plan(plan_evacuate(snap, "src", PlacementPolicy(), WEIGHTS))
    assert received(plan) == Counter({"a1": 6})
    assert plan.warnings == ()


def test_avoid_tags_and_to_win_over_the_spread() -> None:
    agents, routers, placement = uneven_survivors()
    routers = [
        router(r.id, tags=("l3ha:avoid=host-a2",)) if r.id.startswith("m-") else r for r in routers
    ]
    snap = snapshot(agents, routers, placement)
    plan = as_plan(plan_evacuate(snap, "src", PlacementPolicy(), WEIGHTS))
    assert "a2" not in received(plan)
    assert sorted(received(plan).values()) == [3, 4]  # cap 3 over a1/a3, then one level more
    to_a1 = PlacementPolicy(allowed_targets=frozenset({"a1"}))
    assert received(as_plan(plan_evacuate(snap, "src", to_a1, WEIGHTS))) == Counter({"a1": 7})


def test_busy_routers_still_spread_by_busy_count_first() -> None:
    agents = [agent("src", alive=False), agent("a1"), agent("a2"), agent("a3")]
    moving = many("busy", 3, busy=True) + many("quiet", 3)
    old_busy = many("old", 2, busy=True)
    snap = snapshot(
        agents,
        [*moving, *old_busy],
        {**{r.id: "src" for r in moving}, "old-000": "a2", "old-001": "a3"},
    )
    plan = as_plan(plan_evacuate(snap, "src", PlacementPolicy(), WEIGHTS))
    after = busy_counts(apply_plan(snap, plan))
    # the canary's quiet routers fill a1 (the emptiest) to the cap of ceil(6 / 3) = 2, the
    # third goes to a2; the first busy router still goes to a1, the only agent without one
    assert (after["a1"], after["a2"], after["a3"]) == (1, 2, 2)
    assert received(plan) == Counter({"a1": 3, "a2": 2, "a3": 1})


def test_ha_replicas_count_in_the_queues() -> None:
    agents = [agent("src", alive=False), agent("a1"), agent("a2"), agent("a3")]
    ha = [router(f"ha-{i}", ha=True) for i in range(3)]
    plain = many("p", 3)
    fillers = many("f", 12)
    placement: dict[str, str | list[str]] = {r.id: ["src", "a3"] for r in ha}
    placement |= {r.id: "src" for r in plain}
    placement |= {f.id: ("a2" if i < 6 else "a3") for i, f in enumerate(fillers)}
    snap = snapshot(agents, [*ha, *plain, *fillers], placement)
    plan = as_plan(plan_evacuate(snap, "src", PlacementPolicy(), WEIGHTS))
    assert max(received(plan).values()) <= 2  # ceil(6 / 3): new replicas included
    assert all(m.target != "a3" for m in plan.moves if m.router_id.startswith("ha-"))
