"""Hypothesis properties of every planner function over random small worlds.

Deterministic (also under reordered input), idempotent (planning again on the
applied plan gives no moves), never a dead/disabled/dvr/avoided/outside-``--to``
target, capacities never exceeded, every router of an evacuated agent placed or
reported, never two replicas on one agent (``apply_plan`` raises on that),
balance within 1 and busy/count moves equal to the lower bound when
unconstrained, and capped rebalances that only improve.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from l3ha.model import Agent, AgentMode, Binding, Halt, MoveKind, Plan, Router, Snapshot
from l3ha.planner import (
    PlacementPolicy,
    apply_plan,
    plan_drain,
    plan_evacuate,
    plan_migrate,
    plan_rebalance,
    plan_repair,
)
from l3ha.planner.balance import Phase
from l3ha.planner.policy import agent_named, avoided_hosts
from l3ha.planner.targets import mode_fits
from l3ha.weights import BUSY_TAG

from .helpers import WEIGHTS, busy_counts, counts

FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ZONES = ("z1", "z2", "z3")


@st.composite
def worlds(draw: st.DrawFn, constrained: bool = True) -> Snapshot:
    """Up to 6 agents and 20 routers; ``constrained=False``: healthy legacy, busy tags only."""
    agents = []
    for i in range(draw(st.integers(1, 6))):
        mode = draw(st.sampled_from(list(AgentMode))) if constrained else AgentMode.LEGACY
        healthy = not constrained or draw(st.integers(0, 3)) > 0
        agents.append(
            Agent(
                id=f"a{i}",
                host=f"h{i}",
                availability_zone=draw(st.sampled_from(ZONES)),
                mode=mode,
                alive=healthy or draw(st.booleans()),
                admin_state_up=healthy,
            )
        )
    routers: list[Router] = []
    bindings: list[Binding] = []
    for j in range(draw(st.integers(0, 20))):
        router = _router(draw, f"r{j:02d}", agents, constrained)
        routers.append(router)
        bindings.extend(_bindings(draw, router, agents, constrained))
    return Snapshot(tuple(agents), tuple(routers), tuple(bindings))


def _router(draw: st.DrawFn, rid: str, agents: list[Agent], constrained: bool) -> Router:
    tags = [BUSY_TAG] if draw(st.integers(0, 4)) == 0 else []
    if not constrained:
        return Router(id=rid, tags=tuple(tags))
    if draw(st.integers(0, 4)) == 0:
        tags.append(f"l3ha:weight={draw(st.integers(1, 12))}")
    hosts = [a.host for a in agents]
    if draw(st.integers(0, 5)) == 0:
        tags.append("l3ha:prefer=" + draw(st.sampled_from(hosts)))
    if draw(st.integers(0, 5)) == 0:
        tags.append("l3ha:avoid=" + draw(st.sampled_from(hosts)))
    hints = (draw(st.sampled_from(ZONES)),) if draw(st.integers(0, 4)) == 0 else ()
    return Router(
        id=rid,
        ha=draw(st.integers(0, 3)) == 0,
        distributed=draw(st.integers(0, 4)) == 0,
        availability_zone_hints=hints,
        tags=tuple(tags),
    )


def _bindings(
    draw: st.DrawFn, router: Router, agents: list[Agent], constrained: bool
) -> list[Binding]:
    fitting = [a.id for a in agents if mode_fits(router, a)]
    if not fitting or (constrained and draw(st.integers(0, 6)) == 0):
        return []  # unhosted
    if router.ha:
        chosen = draw(st.lists(st.sampled_from(fitting), min_size=1, max_size=3, unique=True))
    else:
        chosen = [draw(st.sampled_from(fitting))]
    return [Binding(router.id, agent_id) for agent_id in chosen]


@st.composite
def policies(draw: st.DrawFn, snapshot: Snapshot) -> PlacementPolicy:
    ids = [a.id for a in snapshot.agents]
    allowed = draw(st.none() | st.frozensets(st.sampled_from(ids), min_size=1))
    return PlacementPolicy(
        max_routers_per_agent=draw(st.none() | st.integers(1, 8)),
        max_weight_per_agent=draw(st.none() | st.integers(3, 40)),
        strict_az=draw(st.booleans()),
        allowed_targets=allowed,
        canary_size=draw(st.integers(0, 3)),
    )


def world_and_policy() -> st.SearchStrategy[tuple[Snapshot, PlacementPolicy]]:
    return worlds().flatmap(lambda s: st.tuples(st.just(s), policies(s)))


def reversed_input(snap: Snapshot) -> Snapshot:
    return Snapshot(snap.agents[::-1], snap.routers[::-1], snap.bindings[::-1])


def all_plans(snap: Snapshot, policy: PlacementPolicy) -> list[Plan | Halt]:
    plans: list[Plan | Halt] = [
        plan_rebalance(snap, policy, WEIGHTS),
        plan_repair(snap, policy, WEIGHTS),
    ]
    for agent in sorted(snap.agents, key=lambda a: a.id):
        plans.append(plan_evacuate(snap, agent.id, policy, WEIGHTS))
        plans.append(plan_drain(snap, agent.id, policy, WEIGHTS))
    router_ids = sorted(r.id for r in snap.routers)
    plans.append(plan_migrate(snap, router_ids, policy, WEIGHTS))
    return plans


def check_targets(snap: Snapshot, plan: Plan, policy: PlacementPolicy) -> None:
    """Every target is healthy, of a fitting mode, not avoided, allowed; capacity holds."""
    after = apply_plan(snap, plan)  # raises on a second replica on one agent
    load = counts(after)
    weight = {a.id: 0 for a in snap.agents}
    for b in after.bindings:
        weight[b.agent_id] += WEIGHTS.weight(after.routers_by_id[b.router_id])
    for move in plan.moves:
        if move.target is None:
            continue
        agent = snap.agents_by_id[move.target]
        router = snap.routers_by_id[move.router_id]
        assert agent.usable, move
        assert mode_fits(router, agent), move
        assert not agent_named(agent, avoided_hosts(router)), move
        assert policy.allowed_targets is None or agent.id in policy.allowed_targets
        if policy.max_routers_per_agent is not None:
            assert load[agent.id] <= policy.max_routers_per_agent
        if policy.max_weight_per_agent is not None:
            assert weight[agent.id] <= policy.max_weight_per_agent


@FAST
@given(world_and_policy())
def test_deterministic_and_independent_of_input_order(
    case: tuple[Snapshot, PlacementPolicy],
) -> None:
    snap, policy = case
    first = all_plans(snap, policy)
    assert first == all_plans(snap, policy)
    assert first == all_plans(reversed_input(snap), policy)


@FAST
@given(world_and_policy())
def test_targets_are_always_eligible_and_within_capacity(
    case: tuple[Snapshot, PlacementPolicy],
) -> None:
    snap, policy = case
    for plan in all_plans(snap, policy):
        if isinstance(plan, Plan):
            check_targets(snap, plan, policy)


@FAST
@given(world_and_policy())
def test_planning_again_on_the_result_gives_no_moves(
    case: tuple[Snapshot, PlacementPolicy],
) -> None:
    snap, policy = case
    rebalance = plan_rebalance(snap, policy, WEIGHTS)
    assert plan_rebalance(apply_plan(snap, rebalance), policy, WEIGHTS).moves == ()
    repair = plan_repair(snap, policy, WEIGHTS)
    assert plan_repair(apply_plan(snap, repair), policy, WEIGHTS).moves == ()
    for agent in snap.agents:
        plan = plan_evacuate(snap, agent.id, policy, WEIGHTS)
        if isinstance(plan, Plan):
            again = plan_evacuate(apply_plan(snap, plan), agent.id, policy, WEIGHTS)
            assert isinstance(again, Plan) and again.moves == ()


@FAST
@given(world_and_policy())
def test_every_router_of_an_evacuated_agent_is_placed_or_reported(
    case: tuple[Snapshot, PlacementPolicy],
) -> None:
    snap, policy = case
    for agent in snap.agents:
        plan = plan_evacuate(snap, agent.id, policy, WEIGHTS)
        hosted = {b.router_id for b in snap.bindings_of_agent(agent.id)}
        if isinstance(plan, Halt):
            assert hosted and plan.evidence["source"] == agent.id
            continue
        moved = {m.router_id for m in plan.moves}
        refused = {u.router_id for u in plan.unplaceable}
        assert moved | refused == hosted
        assert not moved & refused
        assert all(u.reason for u in plan.unplaceable)
        assert all(m.reason for m in plan.moves)
        assert apply_plan(snap, plan).bindings_of_agent(agent.id) == tuple(
            b for b in snap.bindings_of_agent(agent.id) if b.router_id in refused
        )
        assert 0 <= plan.canary <= len(plan.moves)


@FAST
@given(world_and_policy())
def test_repair_never_touches_a_replica_on_a_healthy_agent(
    case: tuple[Snapshot, PlacementPolicy],
) -> None:
    snap, policy = case
    plan = plan_repair(snap, policy, WEIGHTS)
    for move in plan.moves:
        if move.kind == MoveKind.REMOVE_REPLICA:
            assert move.source is not None
            assert not snap.agents_by_id[move.source].usable
        assert move.kind != MoveKind.MOVE


def spread(values: list[int]) -> int:
    return max(values) - min(values)


@FAST
@given(worlds(constrained=False))
def test_unconstrained_rebalance_is_balanced_with_lower_bound_moves(snap: Snapshot) -> None:
    plan = plan_rebalance(snap, PlacementPolicy(), WEIGHTS)
    after = apply_plan(snap, plan)
    ids = [a.id for a in snap.agents]
    assert spread([counts(after)[i] for i in ids]) <= 1
    assert spread([busy_counts(after)[i] for i in ids]) <= 1
    assert plan.lower_bound is not None
    assert len(plan.moves) >= plan.lower_bound
    balancing = [m for m in plan.moves if not m.reason.endswith(Phase.WEIGHT.value)]
    assert len(balancing) == plan.lower_bound


def potential(snap: Snapshot) -> tuple[int, int, int]:
    ids = [a.id for a in snap.agents]
    c, b = counts(snap), busy_counts(snap)
    w = dict.fromkeys(ids, 0)
    for binding in snap.bindings:
        w[binding.agent_id] += WEIGHTS.weight(snap.routers_by_id[binding.router_id])
    return (
        sum(b[i] ** 2 for i in ids),
        sum(c[i] ** 2 for i in ids),
        sum(v * v for v in w.values()),
    )


@FAST
@given(worlds(constrained=False), st.integers(0, 6))
def test_capped_rebalance_only_improves(snap: Snapshot, cap: int) -> None:
    plan = plan_rebalance(snap, PlacementPolicy(), WEIGHTS, max_moves=cap)
    assert len(plan.moves) <= cap
    if plan.moves:
        assert potential(apply_plan(snap, plan)) < potential(snap)


@FAST
@given(worlds(constrained=False))
def test_evacuation_never_stacks_busy_routers_while_another_agent_has_fewer(
    snap: Snapshot,
) -> None:
    source = snap.agents[0].id
    plan = plan_evacuate(snap, source, PlacementPolicy(), WEIGHTS)
    survivors = [a.id for a in snap.agents[1:]]
    if isinstance(plan, Halt) or not survivors:
        return
    before, after = busy_counts(snap), busy_counts(apply_plan(snap, plan))
    low = min(after[i] for i in survivors)
    assert max(after[i] for i in survivors) <= max(*(before[i] for i in survivors), low + 1)


def _reference_choice(
    snap: Snapshot,
    load: dict[str, list[int]],
    router: Router,
    barred: set[str],
    queue: tuple[Counter[str], int] | None,
) -> str | None:
    """The ranking rule written out plainly: fewest busy (busy routers), then for an
    evacuation the fewest of the plan's routers beyond ``ceil(k / n)``, weight, count, id."""
    busy = WEIGHTS.is_busy(router)
    pool = [a.id for a in snap.agents if a.usable and a.can_host_centralized and a.id not in barred]

    def key(agent_id: str) -> tuple[int, int, int, int, str]:
        count, weight, busy_count = load[agent_id]
        over = 0 if queue is None else max(0, queue[0][agent_id] - queue[1] + 1)
        return (busy_count if busy else 0, over, weight, count, agent_id)

    return min(pool, key=key) if pool else None


def _evacuation_queue(snap: Snapshot, source: str) -> tuple[Counter[str], int]:
    """No placements yet, and the cap: ceil(routers on the source / other pool agents)."""
    agent, routers = snap.agents_by_id[source], snap.routers_by_id
    moving = {
        b.router_id
        for b in snap.bindings
        if b.agent_id == source
        and not (
            routers[b.router_id].distributed
            and not routers[b.router_id].ha
            and agent.mode != AgentMode.DVR_SNAT
        )
    }
    others = [a for a in snap.agents if a.usable and a.can_host_centralized and a.id != source]
    return Counter(), max(1, -(-len(moving) // max(1, len(others))))


@FAST
@given(worlds())
def test_unconstrained_routers_go_to_the_least_loaded_agent(snap: Snapshot) -> None:
    """Replays evacuate and repair plans against the plain ranking rule (an evacuation
    also spreads its routers over the targets' queues: ``_evacuation_queue``)."""
    plans: list[tuple[Plan | Halt, tuple[Counter[str], int] | None]] = [
        (plan_repair(snap, PlacementPolicy(), WEIGHTS), None)
    ]
    plans += [
        (plan_evacuate(snap, a.id, PlacementPolicy(), WEIGHTS), _evacuation_queue(snap, a.id))
        for a in snap.agents
    ]
    for plan, queue in plans:
        if isinstance(plan, Halt):
            continue
        load = {a.id: [0, 0, 0] for a in snap.agents}
        holders: dict[str, set[str]] = {}
        for b in snap.bindings:
            router = snap.routers_by_id[b.router_id]
            load[b.agent_id][0] += 1
            load[b.agent_id][1] += WEIGHTS.weight(router)
            load[b.agent_id][2] += WEIGHTS.is_busy(router)
            holders.setdefault(router.id, set()).add(b.agent_id)
        for move in plan.moves:
            router = snap.routers_by_id[move.router_id]
            plain = not (router.ha or router.distributed or router.availability_zone_hints)
            plain = plain and not any(
                t.startswith(("l3ha:prefer=", "l3ha:avoid=")) for t in router.tags
            )
            barred = holders.get(router.id, set()) | {move.source} - {None}
            if plain and move.target is not None:
                assert move.target == _reference_choice(snap, load, router, barred, queue), move
            if queue is not None and move.target is not None:
                queue[0][move.target] += 1
            for agent_id, sign in ((move.source, -1), (move.target, 1)):
                if agent_id is None or (move.kind == MoveKind.ADD_REPLICA and sign < 0):
                    continue
                load[agent_id][0] += sign
                load[agent_id][1] += sign * WEIGHTS.weight(router)
                load[agent_id][2] += sign * WEIGHTS.is_busy(router)
                (
                    holders.setdefault(router.id, set()).add
                    if sign > 0
                    else holders[router.id].discard
                )(agent_id)
