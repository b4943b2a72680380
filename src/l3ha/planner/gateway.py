"""Plans for router gateways on OVN gateway chassis: evacuate a dead chassis, drain a live
one. Pure.

``plan_evacuate`` takes a dead chassis out of every router group that holds it, so that
it cannot pre-empt those routers back when it returns (OVN fails a router back to its
highest-priority chassis as soon as that chassis is up: a second outage). Where the
router would be left with fewer than ``min_chassis`` live chassis, a replacement is
added at a priority below every other chassis of the group, so it becomes primary only
if the others fail. A replacement is a live chassis not in the group, chosen in an
availability zone the group's live chassis do not cover first, then the one with the
fewest primaries, then the fewest groups (the plan's own additions counted as both).

``plan_drain`` moves a live chassis' primaries away gracefully: for each router whose
primary it is, another live chassis of the group (fewest primaries first, the plan's own
promotions counted) is raised above every chassis of the group, and the drained chassis
is then lowered to the bottom; in the groups where it is not the primary it is lowered
only. Routers it is primary of come first, the quietest (fewest other routers on the
target) first, so the canary is the first move.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from l3ha.model import Agent
from l3ha.ovn_model import HIGHEST_PRIORITY, LOWEST_PRIORITY, OvnSnapshot


class GatewayMoveKind(StrEnum):
    """What one step of a gateway plan does to a router's chassis group."""

    REPLACE = "gateway_replace"  # remove the source chassis, add the target at the bottom
    REMOVE = "gateway_remove"  # remove the source chassis (enough live chassis remain)
    ADD = "gateway_add"  # add the target at the bottom (a router short of live chassis)
    PROMOTE = "gateway_promote"  # raise the target above every chassis, then lower the source
    DEMOTE = "gateway_demote"  # lower the source below every other chassis of the group
    RAISE = "gateway_raise"  # raise the target above every chassis (a rebalance): nothing more


@dataclass(frozen=True, slots=True)
class GatewayMove:
    """One change to one router's group, with the reason an operator will read.
    ``priority``: the target's priority (a REPLACE)."""

    router_id: str
    kind: GatewayMoveKind
    source: str | None = None
    target: str | None = None
    priority: int | None = None
    reason: str = ""

    @property
    def object_id(self) -> str:
        return self.router_id


@dataclass(frozen=True)
class GatewayPlan:
    """Ordered gateway moves of one action, plus warnings (e.g. a router short of chassis);
    ``unplaceable`` stays empty (a router short of chassis is a warning, not unplaced);
    ``lower_bound``: the fewest moves any balanced end state needs (a rebalance)."""

    action: str
    moves: tuple[GatewayMove, ...] = ()
    warnings: tuple[str, ...] = field(default_factory=tuple)
    unplaceable: tuple[str, ...] = ()
    lower_bound: int | None = None


def bottom_priority(used: set[int]) -> int | None:
    """A free priority below every used one, else the lowest free one; None when all are used."""
    below = min(used, default=HIGHEST_PRIORITY + 1) - 1
    if below >= LOWEST_PRIORITY:
        return below
    free = (p for p in range(LOWEST_PRIORITY, HIGHEST_PRIORITY + 1) if p not in used)
    return next(free, None)


class _Load:
    """Primaries and group memberships per chassis; the plan's additions count as both (each
    is the router's next primary should its live chassis fail)."""

    def __init__(self, world: OvnSnapshot) -> None:
        self.primaries = {c.id: len(world.primaries_of(c.id)) for c in world.chassis}
        self.groups = {c.id: len(world.routers_of(c.id)) for c in world.chassis}

    def add(self, chassis_id: str) -> None:
        self.primaries[chassis_id] += 1
        self.groups[chassis_id] += 1

    def key(self, chassis: Agent, covered_azs: set[str]) -> tuple[bool, int, int, str]:
        return (
            chassis.availability_zone in covered_azs,
            self.primaries[chassis.id],
            self.groups[chassis.id],
            chassis.host,
        )


def plan_evacuate(
    world: OvnSnapshot,
    chassis_id: str,
    min_chassis: int,
    action: str = "evacuate",
    short: frozenset[str] = frozenset(),
) -> GatewayPlan:
    """Take ``chassis_id`` out of every group; keep ``min_chassis`` live chassis per router
    where the cloud has them, one replacement per router and run (module docstring).
    ``short``: routers an interrupted run left without their replacement: topped up too."""
    load = _Load(world)
    live = [c for c in world.chassis if c.alive and c.id != chassis_id]
    moves: list[GatewayMove] = []
    warnings: list[str] = []
    holding = world.routers_of(chassis_id)
    for router_id in (*holding, *sorted(short - set(holding))):
        source = chassis_id if router_id in holding else None
        group = world.group(router_id)
        members = {b.chassis_id for b in group}
        staying = [c for c in world.live_chassis(router_id) if c != chassis_id]
        needed = max(0, min_chassis - len(staying))
        candidates = [c for c in live if c.id not in members]
        if needed and not candidates:
            warnings.append(
                f"router {router_id}: no live gateway chassis outside its group; "
                f"{len(staying)} live chassis left (wanted {min_chassis})"
            )
        if not needed or not candidates:
            if source is not None:
                moves.append(_remove(router_id, chassis_id, len(staying)))
            continue
        if needed > 1:
            warnings.append(
                f"router {router_id}: one replacement per run; {len(staying) + 1} live "
                f"chassis after it (wanted {min_chassis})"
            )
        azs = {world.chassis_by_id[c].availability_zone for c in staying}
        target = min(candidates, key=lambda c: load.key(c, azs))
        load.add(target.id)
        priority = bottom_priority({b.priority for b in group if b.chassis_id != chassis_id})
        moves.append(_replace(router_id, source, target, priority))
    return GatewayPlan(action, tuple(moves), tuple(warnings))


def _replace(
    router_id: str, source: str | None, target: Agent, priority: int | None
) -> GatewayMove:
    added = f"{target.host} added at priority {priority}"
    if source is None:
        reason = f"short of live gateway chassis after an interrupted run: {added}"
        return GatewayMove(router_id, GatewayMoveKind.ADD, None, target.id, priority, reason)
    reason = f"gateway chassis {source} is dead: removed so it cannot fail back; {added}"
    return GatewayMove(router_id, GatewayMoveKind.REPLACE, source, target.id, priority, reason)


def _remove(router_id: str, chassis_id: str, staying: int) -> GatewayMove:
    reason = (
        f"gateway chassis {chassis_id} is dead: removed so it cannot fail back; "
        f"{staying} live chassis remain"
    )
    return GatewayMove(router_id, GatewayMoveKind.REMOVE, chassis_id, None, None, reason)


def plan_drain(
    world: OvnSnapshot,
    chassis_id: str,
    action: str = "drain",
    drained: frozenset[str] = frozenset(),
) -> GatewayPlan:
    """Move the live ``chassis_id``'s primaries away, then lower it everywhere (docstring);
    a chassis in ``drained`` (drained before) is never a target."""
    load = _Load(world)
    promotes: list[GatewayMove] = []
    demotes: list[GatewayMove] = []
    warnings: list[str] = []
    for router_id in world.routers_of(chassis_id):
        if world.primary(router_id) != chassis_id:
            demotes.append(_demote(router_id, chassis_id))
            continue
        others = [world.chassis_by_id[c] for c in world.live_chassis(router_id)]
        others = [c for c in others if c.id != chassis_id and c.id not in drained]
        if not others:
            warnings.append(
                f"router {router_id}: no other live chassis in its group (drained ones "
                "excluded): kept"
            )
            continue
        target = min(others, key=lambda c: load.key(c, set()))
        load.add(target.id)
        top = max(b.priority for b in world.group(router_id)) + 1
        if top > HIGHEST_PRIORITY:
            warnings.append(f"router {router_id}: its group is at the highest priority: kept")
            continue
        reason = f"drain {chassis_id}: {target.host} raised to {top}, then {chassis_id} lowered"
        promotes.append(
            GatewayMove(router_id, GatewayMoveKind.PROMOTE, chassis_id, target.id, top, reason)
        )
    return GatewayPlan(action, (*promotes, *demotes), tuple(warnings))


def _demote(router_id: str, chassis_id: str) -> GatewayMove:
    reason = f"drain {chassis_id}: lowered below every other chassis (not the primary)"
    return GatewayMove(router_id, GatewayMoveKind.DEMOTE, chassis_id, None, None, reason)
