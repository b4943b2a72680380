"""Plans that empty one agent: evacuate (dead agent) and drain (live agent). Pure.

Order: a canary batch of ``canary_size`` quiet routers (lowest weight, then
id) first, marked by ``Plan.canary`` so the executor can re-check the source
before the rest; then busy routers (heaviest first), then the others
(heaviest first). Legacy routers and DVR snat bindings are moved; HA routers
keep running: their replica on the source is replaced (ADD_REPLICA on another
agent, then REMOVE_REPLICA on the source). Every router on the agent ends up
either in a move or in ``unplaceable`` with a reason.

An evacuation places for recovery time, not only for the final balance: no
target takes more than ``ceil(k / n)`` of its ``k`` routers while another
eligible one has room under that cap (``Targets.place_for_recovery``), since
each agent wires its new routers one after another and the routers are dark
until then. A drain keeps the balance-first placement: its routers still
forward on the live source while the targets wire them.
"""

from __future__ import annotations

from collections.abc import Iterable

from l3ha.errors import NotFoundError
from l3ha.model import (
    Agent,
    AgentMode,
    Binding,
    Halt,
    HaltReason,
    HAState,
    MoveKind,
    Plan,
    Router,
    Snapshot,
)
from l3ha.planner.builder import PlanBuilder, replace_binding
from l3ha.planner.load import PlanState
from l3ha.planner.policy import PlacementPolicy
from l3ha.planner.targets import Targets
from l3ha.weights import WeightPolicy


def source_agent(snapshot: Snapshot, agent_id: str) -> Agent:
    """The agent with exactly this id (``NotFoundError`` otherwise)."""
    agent = snapshot.agents_by_id.get(agent_id)
    if agent is None:
        raise NotFoundError(f"no L3 agent with id {agent_id!r}")
    return agent


def bindings_on(snapshot: Snapshot, agent_id: str) -> list[Binding]:
    """The bindings on one agent (a scan: cheaper than building the snapshot's index)."""
    return [b for b in snapshot.bindings if b.agent_id == agent_id]


def check_allowed_targets(snapshot: Snapshot, policy: PlacementPolicy) -> None:
    """Every ``--to`` agent id must exist (``NotFoundError`` naming the unknown ones)."""
    if policy.allowed_targets is None:
        return
    unknown = sorted(policy.allowed_targets - set(snapshot.agents_by_id))
    if unknown:
        raise NotFoundError(f"unknown target agent id(s): {', '.join(unknown)}")


def plan_evacuate(
    snapshot: Snapshot,
    agent_id: str,
    placement: PlacementPolicy,
    weights: WeightPolicy,
    router_ids: Iterable[str] | None = None,
) -> Plan | Halt:
    """Move every router (or only ``router_ids``) off the agent ``agent_id``."""
    return plan_off_agent(
        snapshot, agent_id, placement, weights, action="evacuate", router_ids=router_ids
    )


def plan_drain(
    snapshot: Snapshot, agent_id: str, placement: PlacementPolicy, weights: WeightPolicy
) -> Plan | Halt:
    """Move every router off a live agent being taken out, make-before-break for HA."""
    return plan_off_agent(snapshot, agent_id, placement, weights, action="drain", router_ids=None)


def plan_off_agent(
    snapshot: Snapshot,
    agent_id: str,
    placement: PlacementPolicy,
    weights: WeightPolicy,
    *,
    action: str,
    router_ids: Iterable[str] | None,
) -> Plan | Halt:
    """Shared body of evacuate and drain (see the module docstring)."""
    source = source_agent(snapshot, agent_id)
    check_allowed_targets(snapshot, placement)
    state = PlanState(snapshot, weights)
    targets = Targets(snapshot, placement, state)
    out = PlanBuilder()
    routers = _routers_to_move(snapshot, source, router_ids, out)
    if routers and not [a for a in targets.pool if a.id != source.id]:
        return _no_targets(source, routers, action)
    if action == "evacuate" and placement.recovery_spread:
        targets.place_for_recovery(len(routers), source.id)
    canary, rest = _order(routers, state, placement.canary_size)
    canary_moves = 0
    for index, router in enumerate(canary + rest):
        note = "canary" if index < len(canary) else _load_note(state, router)
        why = f"{action} {source.host}: {note}"
        replace_binding(router, source, targets, out, why, drop_surplus=action == "drain")
        if index == len(canary) - 1:
            canary_moves = len(out.moves)
    if action == "drain":
        _warn_active_replicas(snapshot, source, out)
    _warn_source_state(source, action, out)
    return out.plan(action, canary_moves)


def _routers_to_move(
    snapshot: Snapshot, source: Agent, router_ids: Iterable[str] | None, out: PlanBuilder
) -> list[Router]:
    hosted = sorted({b.router_id for b in bindings_on(snapshot, source.id)})
    wanted = hosted if router_ids is None else list(dict.fromkeys(router_ids))
    hosted_set = set(hosted)
    routers: list[Router] = []
    for router_id in wanted:
        router = snapshot.routers_by_id.get(router_id)
        if router is None:
            out.refuse(router_id, "unknown router id")
        elif router_id not in hosted_set:
            out.refuse(router_id, f"not hosted on agent {source.host} ({source.id})")
        elif router.distributed and not router.ha and source.mode != AgentMode.DVR_SNAT:
            out.refuse(router_id, f"DVR router on a {source.mode} agent follows its compute ports")
        else:
            routers.append(router)
    return routers


def _order(
    routers: list[Router], state: PlanState, canary_size: int
) -> tuple[list[Router], list[Router]]:
    """Canary (quietest first), then busy (heaviest first), then the rest (heaviest first)."""
    quiet = sorted(
        (r for r in routers if not state.cost(r)[1]), key=lambda r: (state.cost(r)[0], r.id)
    )
    canary = quiet[:canary_size]
    chosen = {r.id for r in canary}
    rest = sorted((r for r in routers if r.id not in chosen), key=state.busy_first)
    return canary, rest


def _load_note(state: PlanState, router: Router) -> str:
    weight, busy = state.cost(router)
    return f"busy router (weight {weight}), moved early" if busy else f"weight {weight}"


def _no_targets(source: Agent, routers: list[Router], action: str) -> Halt:
    return Halt(
        reason=HaltReason.NO_TARGETS,
        message=(
            f"{action} {source.host}: no live, enabled agent can take its {len(routers)} router(s)"
        ),
        evidence={"source": source.id, "routers": len(routers)},
    )


def _warn_source_state(source: Agent, action: str, out: PlanBuilder) -> None:
    if action == "evacuate" and source.usable:
        out.warn(f"agent {source.host} is alive and enabled: evacuate is for dead agents (drain)")
    elif action == "drain" and not source.alive:
        out.warn(f"agent {source.host} is dead: its routers are down until moved (evacuate)")


def _warn_active_replicas(snapshot: Snapshot, source: Agent, out: PlanBuilder) -> None:
    moved = {m.router_id for m in out.moves if m.kind == MoveKind.REMOVE_REPLICA}
    active = sorted(
        b.router_id
        for b in bindings_on(snapshot, source.id)
        if b.ha_state == HAState.ACTIVE and b.router_id in moved
    )
    if active:
        out.warn(
            f"{len(active)} HA router(s) are active on {source.host}; removing that replica "
            f"makes VRRP fail over (a few seconds): {', '.join(active[:10])}"
        )
