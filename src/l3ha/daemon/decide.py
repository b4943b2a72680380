"""What the watch daemon should do this cycle, from its own verdicts. Pure.

``overlay`` turns a snapshot into the world as l3ha judges it: an agent is
dead (``alive`` False) only when l3ha's own verdict is DEAD; suspect, grace
and partitioned agents count as alive (they are never a source) but are not
allowed as targets, which only live agents are (``targets``). ``decide``
lists the actions, in order: evacuate each dead agent that still hosts
routers, then repair (bind unhosted routers, replace HA replicas on dead
agents) when there is something to repair, then — only with auto-rebalance
and a healthy fleet — rebalance. ``decide_dhcp`` does the same for DHCP
agents (``--dhcp``): evacuate each dead DHCP agent that hosts networks, else
repair networks below their copy count. ``decide_gateways`` (ML2/OVN): evacuate
each dead gateway chassis still in a router's group; then — only with auto-rebalance
and every chassis settled (a returning one past its restart grace) — rebalance the
primaries (a returning chassis gets nothing back by itself otherwise).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sized
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, TypeVar

from l3ha.dhcp_model import DhcpSnapshot
from l3ha.health import Verdict
from l3ha.model import Agent, Snapshot
from l3ha.operations.request import Action, DhcpAction
from l3ha.ovn_model import OvnSnapshot

W = TypeVar("W", Snapshot, DhcpSnapshot, OvnSnapshot)


@dataclass(frozen=True, slots=True)
class Decision:
    """One action the daemon takes (an action of any kind), on which agent, and why."""

    action: StrEnum
    reason: str
    agent: str | None = None


def overlay(snapshot: W, verdict_of: Mapping[str, Verdict]) -> W:
    """The snapshot (of any kind) with each agent's ``alive`` replaced by l3ha's own
    judgement."""
    field = "chassis" if isinstance(snapshot, OvnSnapshot) else "agents"
    agents = tuple(
        replace(a, alive=verdict_of.get(a.id, Verdict.ALIVE) is not Verdict.DEAD)
        for a in getattr(snapshot, field)
    )
    judged: dict[str, Any] = {field: agents}
    return replace(snapshot, **judged)


def targets(verdict_of: Mapping[str, Verdict]) -> tuple[str, ...]:
    """The agents routers may be moved to: those l3ha judges alive (sorted ids)."""
    return tuple(sorted(a for a, v in verdict_of.items() if v is Verdict.ALIVE))


def _evacuations(
    action: StrEnum,
    agent_words: str,
    agents: Iterable[Agent],
    verdict_of: Mapping[str, Verdict],
    on_agent: Callable[[str], Sized],
) -> list[Decision]:
    """Evacuate each agent (of any kind; by host) l3ha judges dead that still has something
    ``on_agent``."""
    return [
        Decision(action, f"{agent_words} {a.host} is dead (l3ha's observation)", a.id)
        for a in sorted(agents, key=lambda a: a.host)
        if verdict_of.get(a.id) is Verdict.DEAD and on_agent(a.id)
    ]


def decide(
    snapshot: Snapshot, verdict_of: Mapping[str, Verdict], auto_rebalance: bool
) -> list[Decision]:
    """The actions of one cycle (see the module docstring); empty when all is well."""
    decisions = _evacuations(
        Action.EVACUATE, "agent", snapshot.agents, verdict_of, snapshot.bindings_of_agent
    )
    repair = _repair_reason(snapshot, verdict_of)
    if repair:
        decisions.append(Decision(Action.REPAIR, repair))
    return _or_rebalance(decisions, verdict_of, auto_rebalance, "agent")


def _repair_reason(snapshot: Snapshot, verdict_of: Mapping[str, Verdict]) -> str:
    unhosted = len(snapshot.unhosted_routers())
    if unhosted:
        return f"{unhosted} router(s) have no agent"
    dead = {a for a, v in verdict_of.items() if v is Verdict.DEAD}
    ha = {r.id for r in snapshot.routers if r.ha}
    stranded = {b.router_id for b in snapshot.bindings if b.agent_id in dead and b.router_id in ha}
    if stranded:
        return f"{len(stranded)} HA router(s) have a replica on a dead agent"
    return ""


def _or_rebalance(
    decisions: list[Decision], verdict_of: Mapping[str, Verdict], wanted: bool, agent_words: str
) -> list[Decision]:
    """``decisions``; when there are none, a rebalance is ``wanted`` and every agent is alive
    (or disabled), a rebalance."""
    settled = all(v in (Verdict.ALIVE, Verdict.DISABLED) for v in verdict_of.values())
    if wanted and not decisions and settled:
        return [Decision(Action.REBALANCE, f"auto-rebalance: every {agent_words} is alive")]
    return decisions


# --- DHCP (``l3ha watch --dhcp``) ----------------------------------------------


def decide_dhcp(
    snapshot: DhcpSnapshot, verdict_of: Mapping[str, Verdict], agents_per_network: int
) -> list[Decision]:
    """Evacuate each DHCP agent judged dead that hosts networks; then, when a network is
    below its count on the agents l3ha judges alive, repair (never trim)."""
    decisions = _evacuations(
        DhcpAction.EVACUATE, "DHCP agent", snapshot.agents, verdict_of, snapshot.networks_of_agent
    )
    world = overlay(snapshot, verdict_of)
    short = [
        n.id
        for n in world.networks
        if n.needs_dhcp and len(world.serving_agents(n.id)) < agents_per_network
    ]
    if short and not decisions:
        decisions.append(
            Decision(
                DhcpAction.REPAIR,
                f"{len(short)} network(s) on fewer than {agents_per_network} live DHCP agent(s)",
            )
        )
    return decisions


# --- OVN gateway chassis (``l3ha watch`` on ML2/OVN) -------------------------------


def decide_gateways(
    snapshot: OvnSnapshot,
    verdict_of: Mapping[str, Verdict],
    auto_rebalance: bool = False,
    settled: bool = True,
) -> list[Decision]:
    """Evacuate each gateway chassis judged dead that is still in a router's group; with
    ``auto_rebalance``, when there is none, every chassis is judged alive and ``settled``
    (each one alive for its grace: the caller's clock), rebalance."""
    decisions = _evacuations(
        Action.EVACUATE, "gateway chassis", snapshot.chassis, verdict_of, snapshot.routers_of
    )
    wanted = auto_rebalance and settled and bool(verdict_of)
    return _or_rebalance(decisions, verdict_of, wanted, "gateway chassis")
