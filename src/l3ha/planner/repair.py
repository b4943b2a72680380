"""Plan that restores hosting: bind unhosted routers, replace dead HA replicas. Pure.

Unhosted routers are bound (busy ones first, heaviest first). For HA routers,
each replica on a dead or disabled agent is replaced: ADD_REPLICA on a
healthy agent (an AZ not yet holding a replica where possible, load-aware),
then REMOVE_REPLICA of the dead one. Replicas on healthy agents, and an
active replica on any live agent, are never touched (one on a live
but disabled agent is reported; VRRP moves it, and the next repair replaces
it). Legacy routers on dead agents are left to ``evacuate`` (which has safety
gates) and reported as a warning.
"""

from __future__ import annotations

from l3ha.model import Agent, Binding, HAState, Plan, Router, Snapshot, down_word
from l3ha.planner.builder import PlanBuilder, bind_router, replace_binding
from l3ha.planner.load import PlanState
from l3ha.planner.policy import PlacementPolicy
from l3ha.planner.targets import Targets
from l3ha.weights import WeightPolicy


def plan_repair(snapshot: Snapshot, placement: PlacementPolicy, weights: WeightPolicy) -> Plan:
    """Bind unhosted routers and replace HA replicas on dead or disabled agents."""
    state = PlanState(snapshot, weights)
    targets = Targets(snapshot, placement, state)
    out = PlanBuilder()
    hosted = {b.router_id for b in snapshot.bindings}
    unhosted = sorted((r for r in snapshot.routers if r.id not in hosted), key=state.busy_first)
    for router in unhosted:
        bind_router(router, targets, out, "repair: router has no agent")
    for router, agent in _dead_replicas(snapshot, targets):
        why = f"repair: HA replica on {down_word(agent)} agent {agent.host}"
        replace_binding(router, agent, targets, out, why)
    _warn_stranded(snapshot, targets, out)
    return out.plan("repair")


def _on_unhealthy(snapshot: Snapshot) -> list[Binding]:
    unhealthy = {a.id for a in snapshot.agents if not a.usable}
    return [b for b in snapshot.bindings if b.agent_id in unhealthy]


def _dead_replicas(snapshot: Snapshot, targets: Targets) -> list[tuple[Router, Agent]]:
    found: list[tuple[Router, Agent]] = []
    for binding in _on_unhealthy(snapshot):
        router = snapshot.routers_by_id.get(binding.router_id)
        agent = targets.by_id.get(binding.agent_id)
        if router is None or agent is None or not router.ha or agent.usable:
            continue
        if not agent.can_host_centralized:
            continue
        if agent.alive and binding.ha_state == HAState.ACTIVE:
            continue  # the active replica (on a live, disabled agent) is never moved by repair
        found.append((router, agent))
    return sorted(found, key=lambda pair: (pair[0].id, pair[1].id))


def _warn_stranded(snapshot: Snapshot, targets: Targets, out: PlanBuilder) -> None:
    """Warn about legacy routers on dead agents and stale 'active' replicas there."""
    stranded: dict[str, int] = {}
    for binding in _on_unhealthy(snapshot):
        router = snapshot.routers_by_id.get(binding.router_id)
        agent = targets.by_id.get(binding.agent_id)
        if router is None or agent is None or agent.usable:
            continue
        if not router.ha and agent.can_host_centralized:
            stranded[agent.host] = stranded.get(agent.host, 0) + 1
        elif router.ha and binding.ha_state == HAState.ACTIVE:
            out.warn(f"HA router {router.id} reports active on unhealthy agent {agent.host}")
    for host in sorted(stranded):
        out.warn(
            f"{stranded[host]} router(s) on unhealthy agent {host}: use 'l3ha evacuate {host}'"
        )
