"""Which agents may take a router, and in what order of preference. Pure.

The planner chooses each move's target; when that target refuses the router
at run time, the executor tries fallbacks. ``snapshot_candidates`` ranks every
eligible agent of a snapshot by how few routers it hosts (ties by id), which
is what recovery and a missing fallback list use.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from l3ha.model import Agent, Move, Router, Snapshot
from l3ha.planner.targets import mode_fits

#: A function giving the fallback targets of a move, or a router id -> targets mapping.
FallbackTargets = Callable[[Move], Sequence[str]] | Mapping[str, Sequence[str]]


def agent_can_take(agent: Agent, router: Router | None) -> bool:
    """Alive, enabled and of a mode that can host this router (``None``: a legacy one)."""
    fits = agent.can_host_centralized if router is None else mode_fits(router, agent)
    return agent.usable and fits


def why_not(agent: Agent, router: Router | None = None) -> str:
    """A short reason an agent cannot take a router (empty when it can)."""
    if not agent.alive:
        return f"{agent.host} is dead"
    if not agent.admin_state_up:
        return f"{agent.host} is disabled"
    if not agent_can_take(agent, router):
        return f"{agent.host} has agent_mode {agent.mode.value}"
    return ""


def snapshot_candidates(
    snapshot: Snapshot, allowed: Collection[str] | None = None
) -> Callable[[Move], Sequence[str]]:
    """Fallbacks for any move: eligible agents (only ``allowed`` ones when given, as
    ``--to`` says), fewest routers first, never the source."""
    load = {a.id: len(snapshot.bindings_of_agent(a.id)) for a in snapshot.agents}

    def candidates(move: Move) -> Sequence[str]:
        router = snapshot.routers_by_id.get(move.router_id)
        hosting = {b.agent_id for b in snapshot.bindings_of_router(move.router_id)}
        eligible = [
            a
            for a in snapshot.agents
            if agent_can_take(a, router)
            and a.id != move.source
            and a.id not in hosting
            and (allowed is None or a.id in allowed)
        ]
        eligible.sort(key=lambda a: (load[a.id], a.id))
        return [a.id for a in eligible]

    return candidates


def candidate_list(move: Move, fallbacks: FallbackTargets | None) -> list[str]:
    """The planned target first, then fallbacks, without duplicates or the source."""
    extra: Sequence[str] = ()
    if callable(fallbacks):
        extra = fallbacks(move)
    elif fallbacks is not None:
        extra = fallbacks.get(move.router_id, ())
    ordered: list[str] = []
    for agent_id in ([move.target] if move.target else []) + list(extra):
        if agent_id and agent_id != move.source and agent_id not in ordered:
            ordered.append(agent_id)
    return ordered
