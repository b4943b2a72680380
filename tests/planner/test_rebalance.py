"""Rebalance: every agent takes part, counts and busy counts within 1, minimal moves."""

from __future__ import annotations

import pytest

from l3ha.errors import BadInputError
from l3ha.model import AgentMode, MoveKind
from l3ha.planner import PlacementPolicy, apply_plan, plan_rebalance

from .helpers import POLICY, WEIGHTS, agent, busy_counts, counts, many, router, snapshot


def skewed(sizes: list[int], busy: dict[int, int] | None = None):  # type: ignore[no-untyped-def]
    """Agents a0..aN with sizes[i] routers each; busy[i] of them busy."""
    agents = [agent(f"a{i}") for i in range(len(sizes))]
    routers, placement = [], {}
    for i, size in enumerate(sizes):
        n_busy = (busy or {}).get(i, 0)
        for k in range(size):
            r = router(f"r{i}-{k:03d}", busy=k < n_busy)
            routers.append(r)
            placement[r.id] = f"a{i}"
    return snapshot(agents, routers, placement)


def spread(values) -> int:  # type: ignore[no-untyped-def]
    values = list(values)
    return max(values) - min(values)


def test_neutron_ha_tool_bug_66_67_67_64_0_is_impossible() -> None:
    snap = skewed([66, 67, 67, 64, 0])
    plan = plan_rebalance(snap, POLICY, WEIGHTS)
    after = counts(apply_plan(snap, plan))
    assert [after[f"a{i}"] for i in range(5)] == [53, 53, 53, 53, 52]
    assert len(plan.moves) == plan.lower_bound == 52
    donors = {m.source for m in plan.moves}
    assert donors == {"a0", "a1", "a2", "a3"}  # every loaded agent gives, not one donor
    assert {m.target for m in plan.moves} == {"a4"}
    assert all(m.kind == MoveKind.MOVE and m.reason.startswith("rebalance") for m in plan.moves)


def test_lower_bound_uses_the_remainder() -> None:
    snap = skewed([10, 0, 0])  # 10/3: one agent keeps 4, the others get 3
    plan = plan_rebalance(snap, POLICY, WEIGHTS)
    assert plan.lower_bound == 6
    assert len(plan.moves) == 6
    assert sorted(counts(apply_plan(snap, plan)).values()) == [3, 3, 4]


def test_busy_routers_spread_and_counts_stay_within_one() -> None:
    snap = skewed([20, 20, 20], busy={0: 6})
    plan = plan_rebalance(snap, POLICY, WEIGHTS)
    after = apply_plan(snap, plan)
    assert [busy_counts(after)[f"a{i}"] for i in range(3)] == [2, 2, 2]
    assert spread(counts(after).values()) == 0
    # 4 busy leave a0 and 4 quiet come back: the lower bound counts both
    assert len(plan.moves) == plan.lower_bound == 8


def test_balanced_world_gives_no_moves() -> None:
    snap = skewed([5, 4, 5], busy={0: 1, 1: 1})
    plan = plan_rebalance(snap, POLICY, WEIGHTS)
    assert plan.moves == ()
    assert plan.lower_bound == 0


def test_max_moves_caps_and_still_makes_progress() -> None:
    snap = skewed([66, 67, 67, 64, 0])
    capped = plan_rebalance(snap, POLICY, WEIGHTS, max_moves=5)
    assert len(capped.moves) == 5
    assert any("max-moves" in w for w in capped.warnings)
    mid = apply_plan(snap, capped)
    assert counts(mid)["a4"] == 5
    assert max(counts(mid).values()) < 67
    rest = plan_rebalance(mid, POLICY, WEIGHTS)
    assert len(capped.moves) + len(rest.moves) == 52
    assert plan_rebalance(snap, POLICY, WEIGHTS, max_moves=0).moves == ()


def test_negative_max_moves_is_bad_input() -> None:
    with pytest.raises(BadInputError):
        plan_rebalance(skewed([1]), POLICY, WEIGHTS, max_moves=-1)


def test_weighted_load_evened_by_the_router_that_moves() -> None:
    agents = [agent("a1"), agent("a2")]
    heavy = [router(f"h{i}", weight=5) for i in range(3)]
    light = many("l", 4)
    placement = {r.id: "a1" for r in [*heavy, light[0]]} | {r.id: "a2" for r in light[1:]}
    snap = snapshot(agents, heavy + light, placement)
    plan = plan_rebalance(snap, POLICY, WEIGHTS)
    after = apply_plan(snap, plan)
    assert len(plan.moves) == 1
    assert plan.moves[0].router_id.startswith("h")  # weight 5 of a gap of 13 beats weight 1
    weights = {a: 0 for a in ("a1", "a2")}
    for b in after.bindings:
        weights[b.agent_id] += WEIGHTS.weight(after.routers_by_id[b.router_id])
    assert weights == {"a1": 11, "a2": 8}  # was 16 / 3
    assert spread(counts(after).values()) == 1


def test_dead_disabled_and_dvr_agents_take_no_part() -> None:
    agents = [
        agent("a1"),
        agent("a2"),
        agent("dead", alive=False),
        agent("off", up=False),
        agent("compute", mode=AgentMode.DVR),
    ]
    routers = many("r", 10)
    placement = {r.id: "a1" for r in routers[:6]} | {r.id: "dead" for r in routers[6:]}
    snap = snapshot(agents, routers, placement)
    plan = plan_rebalance(snap, POLICY, WEIGHTS)
    assert {m.target for m in plan.moves} == {"a2"}
    assert {m.source for m in plan.moves} == {"a1"}
    assert len(plan.moves) == 3
    assert any("dead or disabled" in w for w in plan.warnings)


def test_constraints_hold_and_are_reported() -> None:
    agents = [agent("a1", az="az1"), agent("a2", az="az2"), agent("a3", az="az2")]
    hinted = [router(f"h{i}", hints=("az1",)) for i in range(6)]
    avoiding = [router(f"v{i}", tags=("l3ha:avoid=host-a2",)) for i in range(3)]
    snap = snapshot(agents, hinted + avoiding, {r.id: "a1" for r in hinted + avoiding})
    plan = plan_rebalance(snap, POLICY, WEIGHTS)
    assert {m.router_id for m in plan.moves} <= {"v0", "v1", "v2"}
    assert all(m.target == "a3" for m in plan.moves)
    assert any("constraints prevent" in w for w in plan.warnings)


def test_capacity_is_never_exceeded() -> None:
    snap = skewed([12, 0, 0])
    policy = PlacementPolicy(max_routers_per_agent=3)
    after = counts(apply_plan(snap, plan_rebalance(snap, policy, WEIGHTS)))
    assert (after["a1"], after["a2"]) == (3, 3)


def test_dvr_snat_bindings_only_balance_among_dvr_snat_agents() -> None:
    agents = [
        agent("s1", mode=AgentMode.DVR_SNAT),
        agent("s2", mode=AgentMode.DVR_SNAT),
        agent("leg"),
    ]
    dvr = [router(f"d{i}", dvr=True) for i in range(6)]
    snap = snapshot(agents, dvr, {r.id: "s1" for r in dvr})
    plan = plan_rebalance(snap, POLICY, WEIGHTS)
    assert {m.target for m in plan.moves} == {"s2"}
    assert len(plan.moves) == 3


def test_ha_replicas_count_as_load_but_stay() -> None:
    agents = [agent("a1"), agent("a2"), agent("a3")]
    ha = [router(f"ha{i}", ha=True) for i in range(4)]
    legacy = many("l", 4)
    placement = {r.id: ["a1", "a2"] for r in ha} | {r.id: "a3" for r in legacy}
    snap = snapshot(agents, ha + legacy, placement)
    plan = plan_rebalance(snap, POLICY, WEIGHTS)
    assert plan.moves == ()  # 4 / 4 / 4 already


def test_az_hinted_routers_balance_within_their_zone() -> None:
    agents = [
        agent("a1", az="az1"),
        agent("a2", az="az1"),
        agent("b1", az="az2"),
        agent("b2", az="az2"),
    ]
    in_az1 = [router(f"x{i}", hints=("az1",)) for i in range(10)]
    in_az2 = [router(f"y{i}", hints=("az2",)) for i in range(6)]
    placement = {r.id: "a1" for r in in_az1} | {r.id: "b1" for r in in_az2}
    snap = snapshot(agents, in_az1 + in_az2, placement)
    plan = plan_rebalance(snap, POLICY, WEIGHTS)
    after = counts(apply_plan(snap, plan))
    assert (after["a1"], after["a2"], after["b1"], after["b2"]) == (5, 5, 3, 3)
    assert len(plan.moves) == 8
    assert all(m.target in ("a2", "b2") for m in plan.moves)
