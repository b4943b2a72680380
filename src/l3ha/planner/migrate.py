"""Plan for moving chosen routers off their current agent. Pure.

Busy routers are placed first (heaviest first), then the others, so busy
ones get the widest choice. A legacy router (or a DVR router's snat binding)
moves to the best other agent; an unhosted one is bound. An HA router is not
moved: one of its non-active replicas (one on a dead or disabled agent
first) is replaced. Unknown ids are reported unplaceable; duplicates count once.
"""

from __future__ import annotations

from collections.abc import Iterable

from l3ha.model import Agent, Halt, HaltReason, HAState, Plan, Router, Snapshot
from l3ha.planner.builder import PlanBuilder, bind_router, replace_binding
from l3ha.planner.evacuate import check_allowed_targets
from l3ha.planner.load import PlanState
from l3ha.planner.policy import PlacementPolicy
from l3ha.planner.targets import Targets, mode_fits
from l3ha.weights import WeightPolicy


def plan_migrate(
    snapshot: Snapshot,
    router_ids: Iterable[str],
    placement: PlacementPolicy,
    weights: WeightPolicy,
) -> Plan | Halt:
    """Move the given routers to the best targets (see the module docstring)."""
    check_allowed_targets(snapshot, placement)
    state = PlanState(snapshot, weights)
    targets = Targets(snapshot, placement, state)
    out = PlanBuilder()
    routers: list[Router] = []
    for router_id in dict.fromkeys(router_ids):
        router = snapshot.routers_by_id.get(router_id)
        if router is None:
            out.refuse(router_id, "unknown router id")
        else:
            routers.append(router)
    if routers and not targets.pool:
        return Halt(
            reason=HaltReason.NO_TARGETS,
            message=f"migrate: no live, enabled agent can take {len(routers)} router(s)",
            evidence={"routers": len(routers)},
        )
    routers.sort(key=state.busy_first)
    for router in routers:
        _migrate_one(snapshot, router, targets, out)
    return out.plan("migrate")


def _migrate_one(snapshot: Snapshot, router: Router, targets: Targets, out: PlanBuilder) -> None:
    source = _source_of(snapshot, router, targets)
    if source is None and not _hosting_agents(snapshot, router, targets):
        bind_router(router, targets, out, "migrate: router is unhosted")
    elif source is None:
        out.refuse(router.id, "HA router: every replica is active; nothing to replace")
    else:
        replace_binding(router, source, targets, out, f"migrate off {source.host}")


def _hosting_agents(snapshot: Snapshot, router: Router, targets: Targets) -> list[Agent]:
    agents = (targets.by_id.get(b.agent_id) for b in snapshot.bindings_of_router(router.id))
    return sorted((a for a in agents if a is not None and mode_fits(router, a)), key=lambda a: a.id)


def _source_of(snapshot: Snapshot, router: Router, targets: Targets) -> Agent | None:
    """The binding to move: the only one (legacy/DVR snat), or a non-active HA replica."""
    hosting = _hosting_agents(snapshot, router, targets)
    if not router.ha:
        return hosting[0] if hosting else None
    states = {b.agent_id: b.ha_state for b in snapshot.bindings_of_router(router.id)}
    replaceable = [a for a in hosting if states.get(a.id) != HAState.ACTIVE]
    replaceable.sort(key=lambda a: (a.usable, a.id))
    return replaceable[0] if replaceable else None
