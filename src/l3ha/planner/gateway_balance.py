"""Rebalance the primaries of router gateways over the live OVN gateway chassis. Pure.

A router's primary is its highest-priority live chassis (``OvnSnapshot.primary``); one
move raises another chassis above every chassis of the group (one graceful priority
change: a PUT where the chassis is in the group already, a POST at that priority where it
is not), so each move changes one router's primary and nothing else.

The pool is every live chassis not marked drained. Balanced is what the L3 rebalance
means by it: busy primaries (``WeightPolicy.is_busy``) differ by at most one between the
pool's chassis, then primaries counted, then weight as even as single moves make it.
Moves are chosen greedily, busiest chassis to the least busy, busy routers first, each
router at most once, a standby already in the group before a chassis that is not; the
plan's ``lower_bound`` is the fewest moves any balanced end state needs
(``lowerbound.balance_bound``). A chassis outside a router's availability-zone hints is
never its target. The lightest move comes first: the canary.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from l3ha.model import Router
from l3ha.ovn_model import HIGHEST_PRIORITY, OvnSnapshot
from l3ha.planner.gateway import GatewayMove, GatewayMoveKind, GatewayPlan
from l3ha.planner.lowerbound import balance_bound
from l3ha.weights import WeightPolicy


@dataclass
class _Loads:
    """Each pool chassis' primaries (the movable ones), busy count and weight, as the plan
    changes them."""

    weights: WeightPolicy
    on: dict[str, list[Router]] = field(default_factory=dict)
    moved: set[str] = field(default_factory=set)

    def count(self, chassis_id: str) -> int:
        return len(self.on[chassis_id])

    def busy(self, chassis_id: str) -> int:
        return sum(1 for r in self.on[chassis_id] if self.weights.is_busy(r))

    def weight(self, chassis_id: str) -> int:
        return sum(self.weights.weight(r) for r in self.on[chassis_id])

    def key(self, chassis_id: str) -> tuple[int, int, int]:
        return (self.busy(chassis_id), self.count(chassis_id), self.weight(chassis_id))

    def move(self, router: Router, source: str, target: str) -> None:
        self.on[source].remove(router)
        self.on[target].append(router)
        self.moved.add(router.id)


#: Whether moving ``router`` from the first chassis to the second evens the loads out.
_Wanted = Callable[[_Loads, Router, str, str], bool]


def _evens_busy(loads: _Loads, router: Router, source: str, target: str) -> bool:
    return loads.weights.is_busy(router) and loads.busy(source) - loads.busy(target) >= 2


def _evens_count(loads: _Loads, router: Router, source: str, target: str) -> bool:
    if loads.count(source) - loads.count(target) < 2:
        return False
    return not loads.weights.is_busy(router) or loads.busy(source) > loads.busy(target)


def _evens_weight(loads: _Loads, router: Router, source: str, target: str) -> bool:
    if loads.weights.is_busy(router) or loads.count(source) <= loads.count(target):
        return False
    return loads.weights.weight(router) < loads.weight(source) - loads.weight(target)


_PHASES: tuple[_Wanted, ...] = (_evens_busy, _evens_count, _evens_weight)


def plan_gateway_rebalance(
    world: OvnSnapshot,
    weights: WeightPolicy,
    drained: frozenset[str] = frozenset(),
    max_moves: int | None = None,
    action: str = "rebalance",
) -> GatewayPlan:
    """Even out primaries over the live chassis not in ``drained`` (module docstring)."""
    pool = sorted((c for c in world.chassis if c.alive and c.id not in drained), key=lambda c: c.id)
    loads = _Loads(weights, {c.id: [] for c in pool})
    warnings: list[str] = []
    for router in sorted(world.routers, key=lambda r: r.id):
        primary = world.primary(router.id)
        if primary in loads.on:
            loads.on[primary].append(router)
        elif primary is not None:
            host = world.chassis_by_id[primary].host
            warnings.append(f"router {router.id}: its primary is on drained chassis {host}: kept")
    ids = [c.id for c in pool]
    bound = balance_bound([loads.busy(c) for c in ids], [loads.count(c) for c in ids])
    moves: list[tuple[int, GatewayMove]] = []
    for wanted in _PHASES:
        for router, source, target in _greedy(world, loads, wanted):
            if max_moves is not None and len(moves) >= max_moves:
                warnings.append(f"stopped at --max-moves {max_moves}: not balanced yet")
                return _plan(action, moves, warnings, bound)
            moves.append((weights.weight(router), _raise(world, router, source, target, loads)))
            loads.move(router, source, target)
    return _plan(action, moves, warnings, bound)


def _greedy(
    world: OvnSnapshot, loads: _Loads, wanted: _Wanted
) -> Iterator[tuple[Router, str, str]]:
    """The next wanted move, again and again until none is left (bounded: each router
    moves at most once)."""
    for _ in range(len(world.routers) + 1):
        found = _next_move(world, loads, wanted)
        if found is None:
            return
        yield found


def _next_move(
    world: OvnSnapshot, loads: _Loads, wanted: _Wanted
) -> tuple[Router, str, str] | None:
    """From the most loaded chassis to the least loaded one that can take a router: of the
    routers that fit, one whose group holds the target already (a PUT), heaviest first."""
    ranked = sorted(loads.on, key=lambda c: (loads.key(c), c))
    for source in reversed(ranked):
        routers = [r for r in loads.on[source] if r.id not in loads.moved]
        for target in ranked:
            fits = [r for r in routers if _fits(world, r, target)]
            fits = [r for r in fits if wanted(loads, r, source, target)]
            if fits:
                best = min(fits, key=lambda r: _preference(world, r, target, loads.weights))
                return best, source, target
    return None


def _preference(
    world: OvnSnapshot, router: Router, target: str, weights: WeightPolicy
) -> tuple[bool, int, str]:
    members = {b.chassis_id for b in world.group(router.id)}
    return (target not in members, -weights.weight(router), router.id)


def _fits(world: OvnSnapshot, router: Router, target: str) -> bool:
    """The target is in the router's AZ hints (when it has any) and the group has room
    above its top priority."""
    chassis = world.chassis_by_id[target]
    hints = router.availability_zone_hints
    if hints and chassis.availability_zone not in hints:
        return False
    return _top(world, router.id) <= HIGHEST_PRIORITY


def _top(world: OvnSnapshot, router_id: str) -> int:
    return max((b.priority for b in world.group(router_id)), default=0) + 1


def _raise(
    world: OvnSnapshot, router: Router, source: str, target: str, loads: _Loads
) -> GatewayMove:
    top = _top(world, router.id)
    hosts = world.chassis_by_id
    reason = (
        f"rebalance: {hosts[target].host} raised to {top} above {hosts[source].host} "
        f"({loads.count(source)} -> {loads.count(source) - 1} primaries there, "
        f"{loads.count(target)} -> {loads.count(target) + 1} on {hosts[target].host})"
    )
    return GatewayMove(router.id, GatewayMoveKind.RAISE, source, target, top, reason)


def _plan(
    action: str, moves: list[tuple[int, GatewayMove]], warnings: list[str], bound: int
) -> GatewayPlan:
    """The plan with its lightest move first (the canary), the rest in the order chosen."""
    ordered = [m for _, m in moves]
    if moves:
        lightest = min(range(len(moves)), key=lambda i: moves[i][0])
        ordered.insert(0, ordered.pop(lightest))
    return GatewayPlan(action, tuple(ordered), tuple(warnings), lower_bound=bound)
