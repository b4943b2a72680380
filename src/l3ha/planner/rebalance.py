"""Rebalance plan over every live, enabled, eligible agent. Pure.

All pool agents take part at once (never pairs, never one donor), so
66/67/67/64/0 becomes 53/53/53/53/52, not 33/67/67/64/34. Afterwards router
counts and busy counts each differ by at most 1 wherever the constraints
allow, and weighted load is as even as single moves make it (``balance``).
Only routers that must move do: the plan's ``lower_bound`` is the fewest
moves any balanced end state needs (``lowerbound``; it treats every binding
as movable, so with HA replicas or constraints it may be out of reach). Targets obey the same
rules as every placement: mode (DVR snat only on dvr_snat), ``l3ha:avoid``
tags, AZ hints, capacities. HA replicas count as load but are not moved;
routers on dead or disabled agents are left to evacuate and repair.
"""

from __future__ import annotations

from dataclasses import dataclass

from l3ha.errors import BadInputError
from l3ha.model import Agent, AgentMode, Move, MoveKind, Plan, Router, Snapshot
from l3ha.planner.balance import UNLIMITED, Balancer, Limits, Phase
from l3ha.planner.evacuate import check_allowed_targets
from l3ha.planner.lowerbound import balance_bound
from l3ha.planner.policy import PlacementPolicy, agent_named, avoided_hosts, preferred_hosts
from l3ha.planner.targets import eligible_pool, mode_fits
from l3ha.weights import WeightPolicy


@dataclass
class _World:
    """The pool, the movable routers and the balancer built over them."""

    pool: list[Agent]
    routers: list[Router]
    origin: list[int]
    balancer: Balancer
    skipped: int


def plan_rebalance(
    snapshot: Snapshot,
    placement: PlacementPolicy,
    weights: WeightPolicy,
    max_moves: int | None = None,
) -> Plan:
    """Even out routers across the pool with the fewest moves (see module docstring)."""
    if max_moves is not None and max_moves < 0:
        raise BadInputError(f"--max-moves must be >= 0, got {max_moves}")
    check_allowed_targets(snapshot, placement)
    world = _build(snapshot, placement, weights)
    bal = world.balancer
    bound = balance_bound(bal.B, bal.C)
    made = bal.run(max_moves)
    moves = _moves(world)
    warnings = _warnings(world, made, max_moves, bound)
    return Plan(action="rebalance", moves=moves, warnings=warnings, lower_bound=bound)


_Candidate = tuple[int, int, Router, int, bool]  # leave key, weight, router, agent, busy


@dataclass
class _Scan:
    """What one pass over the bindings found: pool loads and movable routers."""

    count: list[int]
    busy: list[int]
    weight: list[int]
    candidates: dict[str, _Candidate]
    doubled: set[str]
    skipped: int = 0


def _build(snapshot: Snapshot, placement: PlacementPolicy, weights: WeightPolicy) -> _World:
    pool = list(eligible_pool(snapshot.agents, placement))
    scan = _scan(snapshot, pool, weights)
    movable = [scan.candidates[rid] for rid in _leaving_order(scan.candidates, scan.doubled)]
    routers = [c[2] for c in movable]
    origin = [c[3] for c in movable]
    allowed = _allowed_sets(routers, pool, placement.strict_az)
    classes = sorted(set(allowed), key=lambda c: (c is not None, sorted(c or ())))
    class_of = {c: k for k, c in enumerate(classes)}
    loads = (scan.count, scan.busy, scan.weight)
    bal = Balancer(loads, [c[1] for c in movable], list(origin), classes, _limits(placement))
    for r, c in enumerate(movable):
        bal.add_router(r, class_of[allowed[r]], c[4])
    return _World(pool, routers, origin, bal, scan.skipped)


def _scan(snapshot: Snapshot, pool: list[Agent], weights: WeightPolicy) -> _Scan:
    """Count every binding on a pool agent; collect the movable ones (hot loop)."""
    index = {a.id: i for i, a in enumerate(pool)}
    snat_only = [a.mode != AgentMode.DVR_SNAT for a in pool]
    n = len(pool)
    scan = _Scan([0] * n, [0] * n, [0] * n, {}, set())
    count, busy, weight, candidates = scan.count, scan.busy, scan.weight, scan.candidates
    routers_by_id = snapshot.routers_by_id
    threshold, overrides = weights.busy_threshold, weights.overrides
    measured = weights.measured
    for binding in snapshot.bindings:
        router = routers_by_id.get(binding.router_id)
        if router is None:
            continue
        i = index.get(binding.agent_id)
        if i is None:
            scan.skipped += int(not router.ha and _on_unhealthy(snapshot, binding.agent_id))
            continue
        rid = router.id
        # untagged, unmeasured routers without an override weigh 1 (WeightPolicy.weight)
        w = weights.weight(router) if router.tags or rid in overrides or rid in measured else 1
        is_busy = w >= threshold
        count[i] += 1
        weight[i] += w
        busy[i] += is_busy
        if router.ha or (router.distributed and snat_only[i]):
            continue
        if rid in candidates:
            scan.doubled.add(rid)
        leave = _leave_key(router, pool[i]) if router.tags else 1
        candidates[rid] = (leave, w, router, i, is_busy)
    return scan


def _leaving_order(candidates: dict[str, _Candidate], doubled: set[str]) -> list[str]:
    """Router ids by (leave key, weight, id): buckets of few distinct keys, then id sorts."""
    buckets: dict[tuple[int, int], list[str]] = {}
    for rid, c in candidates.items():
        if rid not in doubled:
            buckets.setdefault((c[0], c[1]), []).append(rid)
    order: list[str] = []
    for key in sorted(buckets):
        order.extend(sorted(buckets[key]))
    return order


def _on_unhealthy(snapshot: Snapshot, agent_id: str) -> bool:
    agent = snapshot.agents_by_id.get(agent_id)
    return agent is not None and agent.can_host_centralized and not agent.usable


def _leave_key(router: Router, agent: Agent) -> int:
    """Routers on a host they prefer sort first, so they leave last."""
    if not router.tags:
        return 1
    prefer = preferred_hosts(router)
    return 0 if prefer and agent_named(agent, prefer) else 1


def _limits(placement: PlacementPolicy) -> Limits:
    max_count = placement.max_routers_per_agent
    max_weight = placement.max_weight_per_agent
    return Limits(
        count=UNLIMITED if max_count is None else max_count,
        weight=UNLIMITED if max_weight is None else max_weight,
    )


def _allowed_sets(
    routers: list[Router], pool: list[Agent], strict_az: bool
) -> list[frozenset[int] | None]:
    """Per router: the pool agents its constraints allow (None: every agent)."""
    cache: dict[tuple[bool, tuple[str, ...], tuple[str, ...]], frozenset[int] | None] = {}
    result: list[frozenset[int] | None] = []
    for router in routers:
        if not (router.tags or router.distributed or router.availability_zone_hints):
            result.append(None)
            continue
        avoid = avoided_hosts(router) if router.tags else ()
        key = (router.distributed, avoid, router.availability_zone_hints)
        if key not in cache:
            cache[key] = _allowed_for(router, avoid, pool, strict_az)
        result.append(cache[key])
    return result


def _allowed_for(
    router: Router, avoid: tuple[str, ...], pool: list[Agent], strict_az: bool
) -> frozenset[int] | None:
    hints = router.availability_zone_hints
    if not (router.distributed or avoid or hints):
        return None
    fits = [
        j
        for j, a in enumerate(pool)
        if mode_fits(router, a) and not (avoid and agent_named(a, avoid))
    ]
    in_az = [j for j in fits if pool[j].availability_zone in hints]
    if hints and (in_az or strict_az):
        return frozenset(in_az)
    return frozenset(fits)


def _moves(world: _World) -> tuple[Move, ...]:
    bal, pool, origin, cur = world.balancer, world.pool, world.origin, world.balancer.cur
    why = {phase: f"rebalance: {phase.value}" for phase in Phase}
    return tuple(
        Move(world.routers[r].id, MoveKind.MOVE, pool[cur[r]].id, pool[origin[r]].id, why[phase])
        for r, phase in bal.first_phase.items()
        if origin[r] != cur[r]
    )


def _spread(values: list[int]) -> int:
    return max(values) - min(values) if values else 0


def _warnings(world: _World, made: int, max_moves: int | None, bound: int) -> tuple[str, ...]:
    bal = world.balancer
    warnings: list[str] = []
    if not world.pool:
        warnings.append("no live, enabled agent can host routers: nothing to rebalance")
    if max_moves is not None and made >= max_moves:
        warnings.append(
            f"stopped at --max-moves {max_moves}; full balance needs at least {bound} move(s)"
        )
    elif _spread(bal.C) > 1 or _spread(bal.B) > 1:
        warnings.append(
            f"constraints prevent full balance: router counts {min(bal.C)}..{max(bal.C)}, "
            f"busy counts {min(bal.B)}..{max(bal.B)}"
        )
    if world.skipped:
        warnings.append(
            f"{world.skipped} router(s) on dead or disabled agents are not rebalanced "
            "(use evacuate or repair)"
        )
    return tuple(warnings)
