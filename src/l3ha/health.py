"""Agent health judgement and fleet safety gates. Pure.

Liveness comes from l3ha's own observation of each agent's heartbeat value
*changing*, timed on our monotonic clock (safety rule 7): the server's
timestamp is compared only with itself, never with our wall clock. An agent
becomes DEAD only after its heartbeat has been unchanged for longer than
``agent_down_time`` on ``dead_after_observations`` consecutive observations
(rule 6); a restarted agent gets a grace period that grows with the routers it
hosts (rule 8). The fleet gate freezes action when many agents look dead at
once — the fault is then in the control plane (rules 1, 2) — and keeps it
frozen for one ``agent_down_time`` after such an outage ends (rule 3).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

from l3ha.model import Agent, Halt, HaltReason


class Verdict(StrEnum):
    """l3ha's judgement of one agent."""

    ALIVE = "alive"
    SUSPECT = "suspect"  # heartbeat stale, not yet for enough observations
    DEAD = "dead"
    GRACE = "grace"  # restarted recently: not judged yet
    DISABLED = "disabled"


@dataclass(frozen=True)
class HealthPolicy:
    """Thresholds of the health judgement; defaults follow Neutron's and Kubernetes'."""

    agent_down_time: float = 75.0
    dead_after_observations: int = 3
    max_dead_fraction: float = 0.55
    min_dead_for_fraction: int = 3
    restart_grace_base: float = 30.0
    restart_grace_per_router: float = 0.5


@dataclass(frozen=True)
class AgentTrack:
    """What we have seen of one agent's heartbeat."""

    heartbeat: str
    changed_at: float  # our monotonic time when the heartbeat value last changed
    started_at: str
    restarted_at: float | None = None
    stale_observations: int = 0


@dataclass(frozen=True)
class HealthState:
    """Tracks of every agent, and when the last broad outage ended (monotonic)."""

    tracks: Mapping[str, AgentTrack] = field(default_factory=dict)
    outage_since: float | None = None
    outage_ended_at: float | None = None


def observe(
    state: HealthState, agents: Iterable[Agent], now: float, policy: HealthPolicy
) -> HealthState:
    """Fold one observation of every agent's heartbeat (taken at monotonic ``now``) into state."""
    tracks: dict[str, AgentTrack] = {}
    for agent in agents:
        old = state.tracks.get(agent.id)
        if old is None:
            tracks[agent.id] = AgentTrack(agent.heartbeat_timestamp, now, agent.started_at)
            continue
        track = old
        if agent.heartbeat_timestamp != old.heartbeat:
            track = replace(track, heartbeat=agent.heartbeat_timestamp, changed_at=now)
        if agent.started_at != old.started_at:
            track = replace(track, started_at=agent.started_at, restarted_at=now)
        stale = now - track.changed_at > policy.agent_down_time
        track = replace(track, stale_observations=old.stale_observations + 1 if stale else 0)
        tracks[agent.id] = track
    return _update_outage(
        HealthState(tracks, state.outage_since, state.outage_ended_at), now, policy
    )


def verdicts(
    state: HealthState,
    agents: Iterable[Agent],
    now: float,
    policy: HealthPolicy,
    routers_per_agent: Mapping[str, int] | None = None,
) -> dict[str, Verdict]:
    """The verdict for every agent in ``agents`` that has been observed."""
    counts = routers_per_agent or {}
    result: dict[str, Verdict] = {}
    for agent in agents:
        track = state.tracks.get(agent.id)
        if track is not None:
            result[agent.id] = _verdict(agent, track, now, policy, counts.get(agent.id, 0))
    return result


def _verdict(
    agent: Agent, track: AgentTrack, now: float, policy: HealthPolicy, routers: int
) -> Verdict:
    if not agent.admin_state_up:
        return Verdict.DISABLED
    if track.restarted_at is not None:
        grace = policy.restart_grace_base + policy.restart_grace_per_router * routers
        if now - track.restarted_at < grace:
            return Verdict.GRACE
    if track.stale_observations >= policy.dead_after_observations:
        return Verdict.DEAD
    if track.stale_observations > 0:
        return Verdict.SUSPECT
    return Verdict.ALIVE


def _looks_broad(stale: int, total: int, policy: HealthPolicy) -> bool:
    """Whether this many stale agents means the control plane, not the agents, failed."""
    if total == 0 or stale == 0:
        return False
    if stale == total:
        return True
    return stale >= policy.min_dead_for_fraction and stale / total >= policy.max_dead_fraction


def _update_outage(state: HealthState, now: float, policy: HealthPolicy) -> HealthState:
    stale = sum(1 for t in state.tracks.values() if t.stale_observations > 0)
    broad = _looks_broad(stale, len(state.tracks), policy) and len(state.tracks) > 1
    if broad and state.outage_since is None:
        return replace(state, outage_since=now, outage_ended_at=None)
    if not broad and state.outage_since is not None:
        return replace(state, outage_since=None, outage_ended_at=now)
    return state


def fleet_gate(
    state: HealthState, verdict_of: Mapping[str, Verdict], now: float, policy: HealthPolicy
) -> Halt | None:
    """A Halt when acting now would be unsafe for the whole fleet, else None."""
    judged = [v for v in verdict_of.values() if v != Verdict.DISABLED]
    dead = [a for a, v in verdict_of.items() if v in (Verdict.DEAD, Verdict.SUSPECT)]
    if state.outage_since is not None or (
        len(judged) > 1 and _looks_broad(len(dead), len(judged), policy)
    ):
        return Halt(
            HaltReason.CONTROL_PLANE_SUSPECT,
            f"{len(dead)} of {len(judged)} agents look dead at once: suspect the control plane "
            "(message bus, database), not the agents; not moving routers",
            {"dead_agents": sorted(dead), "judged_agents": len(judged)},
        )
    if state.outage_ended_at is not None and now - state.outage_ended_at < policy.agent_down_time:
        wait = policy.agent_down_time - (now - state.outage_ended_at)
        return Halt(
            HaltReason.RECOVERY_GRACE,
            f"a broad outage ended {now - state.outage_ended_at:.0f} s ago; waiting {wait:.0f} s "
            "more (one agent_down_time) before acting",
            {"outage_ended_at": state.outage_ended_at},
        )
    return None


def api_fleet_gate(agents: Iterable[Agent], policy: HealthPolicy) -> Halt | None:
    """The same fleet gate for one-shot commands, judged from the server's ``alive`` flags."""
    enabled = [a for a in agents if a.admin_state_up]
    dead = sorted(a.host for a in enabled if not a.alive)
    if len(enabled) > 1 and _looks_broad(len(dead), len(enabled), policy):
        return Halt(
            HaltReason.CONTROL_PLANE_SUSPECT,
            f"{len(dead)} of {len(enabled)} enabled agents are reported dead at once: suspect the "
            "control plane (message bus), not the agents",
            {"dead_agents": dead, "enabled_agents": len(enabled)},
        )
    return None
