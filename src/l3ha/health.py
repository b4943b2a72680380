"""Agent health judgement and fleet safety gates. Pure.

Liveness comes from l3ha's own observation of each agent's heartbeat value
*changing*, timed on our monotonic clock (safety rule 7): the server's
timestamp is compared only with itself, never with our wall clock. An agent
is SUSPECT once it has missed a heartbeat (silent for longer than
``agent_down_time - report_interval``) and DEAD once it has been silent for
longer than ``agent_down_time`` *and* was seen late on
``dead_after_observations`` consecutive observations (rule 6): one odd reading
never condemns an agent, and when l3ha observes more often than agents report,
the verdict comes at ``agent_down_time``, not N intervals after it. An agent is
ALIVE only once l3ha has seen its heartbeat change: until then it is OBSERVING
(never a move target, never a move source, never counted as settled), and so
again is an agent that was late when a broad outage's recovery wiped its
silence (it must beat again to be alive). A restarted
agent gets a grace period that grows with the routers it
hosts (rule 8); a DEAD agent whose data plane still answers is PARTITIONED and
never acted on (``mark_partitioned``). With the data plane as a second signal
(``--dataplane-confirms``) an agent may also be judged DEAD before its silence
reaches ``agent_down_time``: one late on ``dead_after_observations`` consecutive
observations (``confirm_candidates``; none while any fleet gate holds) whose probed
routers' gateways all failed to answer (``confirm_dead``); the daemon probes, this
module only decides from the result.

The fleet gates (``fleet_halts``: every gate that holds, most telling first) freeze
every automatic move while any holds, and say why (rule 9):

- many agents *late* at once, in the fleet or in one availability zone: the
  fault is in the control plane, not the agents (rules 1, 2). An agent is late
  once it has missed a heartbeat: silent for more than ``agent_down_time -
  report_interval``. Every agent silenced by the same broker outage is late
  before the first of them can be DEAD, so the gate trips first;
- a broad outage just ended: wait one full ``agent_down_time`` (rule 3), and
  then count the silence of agents still silent from that moment only, so
  agents reconnecting slowly after the outage are not judged on it;
- our wall clock jumped against our monotonic clock (NTP step, suspend), or
  the server's heartbeat timestamps jumped against our monotonic clock (most
  heartbeats that changed since the last observation fall outside the tracked
  bounds of server-minus-monotonic time, forwards or backwards): wait one
  ``agent_down_time``. A local jump beyond ``clock_jump_tolerance`` is always
  seen; a server jump is always seen beyond tolerance plus one observation
  interval (a heartbeat is known to have been written only somewhen between
  two observations);
- the snapshot is stale (``snapshot_gate``).

Every halt lifts by itself once its condition has cleared.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

from l3ha.clockjump import ClockJump, ClockSource, local_clock, server_clock
from l3ha.errors import BadInputError
from l3ha.model import Agent, Halt, HaltReason


class Verdict(StrEnum):
    """l3ha's judgement of one agent."""

    ALIVE = "alive"
    OBSERVING = "observing"  # no heartbeat change seen yet: not known alive, not late either
    SUSPECT = "suspect"  # heartbeat stale, not yet for enough observations
    DEAD = "dead"
    GRACE = "grace"  # restarted recently: not judged yet
    DISABLED = "disabled"
    PARTITIONED = "partitioned"  # would be dead, but its data plane still answers


#: Verdicts that call for no one's attention (logged at INFO, not WARNING).
CALM_VERDICTS = frozenset({Verdict.ALIVE, Verdict.OBSERVING})


# --- policy --------------------------------------------------------------------------

_OPTION_OF = {
    "agent_down_time": "--dead-after",
    "dead_after_observations": "--dead-observations",
    "max_dead_fraction": "--max-dead-fraction",
}


@dataclass(frozen=True)
class HealthPolicy:
    """Thresholds of the health judgement; defaults follow Neutron's and Kubernetes'.

    A scope (the fleet, or one availability zone) of more than one agent looks
    broadly failed when all its agents are late, or at least
    ``min_dead_for_fraction`` of them and at least ``max_dead_fraction`` of
    them are (Kubernetes: more than 2 nodes and 0.55 of a zone).
    """

    agent_down_time: float = 75.0
    dead_after_observations: int = 3
    max_dead_fraction: float = 0.55
    min_dead_for_fraction: int = 3
    restart_grace_base: float = 30.0
    restart_grace_per_router: float = 0.5
    report_interval: float = 30.0
    clock_jump_tolerance: float = 5.0

    def __post_init__(self) -> None:
        _require("agent_down_time", self.agent_down_time, lambda v: v > 0, "> 0 seconds")
        for name in ("dead_after_observations", "min_dead_for_fraction"):
            _require(name, getattr(self, name), lambda v: v >= 1, "a whole number >= 1", (int,))
        fraction = self.max_dead_fraction
        _require("max_dead_fraction", fraction, lambda v: 0 < v <= 1, "a fraction in (0, 1]")
        for name in ("restart_grace_base", "restart_grace_per_router"):
            _require(name, getattr(self, name), lambda v: v >= 0, ">= 0 seconds")
        _require(
            "report_interval",
            self.report_interval,
            lambda v: 0 < v < self.agent_down_time,
            f"> 0 and shorter than agent_down_time ({self.agent_down_time:g} s)",
        )
        _require("clock_jump_tolerance", self.clock_jump_tolerance, lambda v: v > 0, "> 0 seconds")

    def restart_grace(self, routers: int) -> float:
        """How long an agent (or chassis) back with ``routers`` routers is given to settle."""
        return self.restart_grace_base + self.restart_grace_per_router * routers

    @property
    def late_after(self) -> float:
        """Silence after which an agent has missed at least one heartbeat."""
        return self.agent_down_time - self.report_interval


def _require(
    name: str,
    value: object,
    ok: Callable[[float], bool],
    want: str,
    kind: tuple[type, ...] = (int, float),
) -> None:
    if isinstance(value, bool) or not isinstance(value, kind) or not _finite_and(value, ok):
        option = f" ({_OPTION_OF[name]})" if name in _OPTION_OF else ""
        raise BadInputError(f"health policy: {name}{option} must be {want}, not {value!r}")


def _finite_and(value: object, ok: Callable[[float], bool]) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and ok(value)


# --- state -----------------------------------------------------------------------------


@dataclass(frozen=True)
class AgentTrack:
    """What we have seen of one agent's heartbeat (times are our monotonic clock)."""

    heartbeat: str
    changed_at: float  # when we first saw the current heartbeat value
    started_at: str
    restarted_at: float | None = None
    stale_observations: int = 0
    zone: str = "nova"
    enabled: bool = True
    counted_from: float = -math.inf  # silence before this (a broad outage) does not count
    beat_seen: bool = False  # a heartbeat change seen (since the silence was last discounted)

    def silence(self, now: float) -> float:
        """Seconds of silence that count against the agent at ``now``."""
        return now - max(self.changed_at, self.counted_from)


@dataclass(frozen=True)
class Outage:
    """A broad outage of one scope: in progress since ``since``, or ended at ``ended_at``."""

    since: float | None = None
    ended_at: float | None = None  # set while recovering (one agent_down_time)


@dataclass(frozen=True)
class HealthState:
    """Everything the judgement remembers between observations."""

    tracks: Mapping[str, AgentTrack] = field(default_factory=dict)
    fleet: Outage = Outage()
    zones: Mapping[str, Outage] = field(default_factory=dict)
    observed_at: float | None = None  # monotonic time of the last observation
    wall_offset: float | None = None  # our wall minus monotonic clock, last observation
    server_offset: tuple[float, float] | None = None  # bounds of server minus monotonic
    clock_jump: ClockJump | None = None  # the latest jump seen


# --- observation -------------------------------------------------------------------


def observe(
    state: HealthState,
    agents: Iterable[Agent],
    now: float,
    policy: HealthPolicy,
    wall: float | None = None,
) -> HealthState:
    """Fold one observation of every agent (taken at monotonic ``now``) into state.

    ``wall`` is our wall clock (``time.time()``) read together with ``now``;
    without it no local clock jump can be seen.
    """
    agents = list(agents)
    tracks = {a.id: _track(state.tracks.get(a.id), a, now) for a in agents}
    server_offset, server_jump = server_clock(
        state.server_offset,
        state.observed_at,
        _new_heartbeats(state, agents),
        now,
        policy.clock_jump_tolerance,
    )
    local_jump = local_clock(state.wall_offset, now, wall, policy.clock_jump_tolerance)
    fleet, zones, tracks = _outages(state, tracks, now, policy)
    tracks = {aid: _count_stale(t, now, policy) for aid, t in tracks.items()}
    return HealthState(
        tracks=tracks,
        fleet=fleet,
        zones=zones,
        observed_at=now,
        wall_offset=state.wall_offset if wall is None else wall - now,
        server_offset=server_offset,
        clock_jump=local_jump or server_jump or state.clock_jump,
    )


def _track(old: AgentTrack | None, agent: Agent, now: float) -> AgentTrack:
    zone, enabled = agent.availability_zone, agent.admin_state_up
    if old is None:
        return AgentTrack(
            agent.heartbeat_timestamp, now, agent.started_at, zone=zone, enabled=enabled
        )
    track = replace(old, zone=zone, enabled=enabled)
    if agent.heartbeat_timestamp != old.heartbeat:
        track = replace(track, heartbeat=agent.heartbeat_timestamp, changed_at=now, beat_seen=True)
    if agent.started_at != old.started_at:
        track = replace(track, started_at=agent.started_at, restarted_at=now)
    return track


def _count_stale(track: AgentTrack, now: float, policy: HealthPolicy) -> AgentTrack:
    """Count consecutive observations of the agent *late* (it missed a heartbeat)."""
    late = track.silence(now) > policy.late_after
    return replace(track, stale_observations=track.stale_observations + 1 if late else 0)


def _late(tracks: Iterable[tuple[str, AgentTrack]], now: float, policy: HealthPolicy) -> list[str]:
    return sorted(aid for aid, t in tracks if t.silence(now) > policy.late_after)


def _outages(
    state: HealthState, tracks: dict[str, AgentTrack], now: float, policy: HealthPolicy
) -> tuple[Outage, dict[str, Outage], dict[str, AgentTrack]]:
    """Advance the fleet's and every zone's outage; discount silence when a recovery ends."""
    enabled = [(aid, t) for aid, t in tracks.items() if t.enabled]
    fleet = _next_outage(state.fleet, enabled, now, policy)
    if _recovered(state.fleet, fleet):
        tracks = {aid: _discount(t, now, policy) for aid, t in tracks.items()}
    zones: dict[str, Outage] = {}
    for zone in sorted({t.zone for _, t in enabled}):
        members = [(aid, t) for aid, t in enabled if t.zone == zone]
        zones[zone] = _next_outage(state.zones.get(zone, Outage()), members, now, policy)
        if _recovered(state.zones.get(zone, Outage()), zones[zone]):
            for aid, _ in members:
                tracks[aid] = _discount(tracks[aid], now, policy)
    return fleet, zones, tracks


def _discount(track: AgentTrack, now: float, policy: HealthPolicy) -> AgentTrack:
    """A recovery ends: silence until ``now`` no longer counts, and an agent late until now
    is observed afresh (OBSERVING until it beats), never taken for alive."""
    beating = track.beat_seen and track.silence(now) <= policy.late_after
    return replace(track, counted_from=now, beat_seen=beating)


def _next_outage(
    prev: Outage, members: list[tuple[str, AgentTrack]], now: float, policy: HealthPolicy
) -> Outage:
    if _looks_broad(len(_late(members, now, policy)), len(members), policy) and len(members) > 1:
        return Outage(since=now if prev.since is None else prev.since)
    if prev.since is not None:
        return Outage(ended_at=now)
    if prev.ended_at is not None and now - prev.ended_at < policy.agent_down_time:
        return prev
    return Outage()


def _recovered(prev: Outage, new: Outage) -> bool:
    return prev.ended_at is not None and new.since is None and new.ended_at is None


def _looks_broad(stale: int, total: int, policy: HealthPolicy) -> bool:
    """Whether this many stale agents means the control plane, not the agents, failed."""
    if total == 0 or stale == 0:
        return False
    if stale == total:
        return True
    return stale >= policy.min_dead_for_fraction and stale / total >= policy.max_dead_fraction


def _new_heartbeats(state: HealthState, agents: list[Agent]) -> list[str]:
    """The heartbeat values that changed since the last observation."""
    return [
        a.heartbeat_timestamp
        for a in agents
        if (old := state.tracks.get(a.id)) is not None and a.heartbeat_timestamp != old.heartbeat
    ]


# --- verdicts ------------------------------------------------------------------------


def verdicts(
    state: HealthState,
    agents: Iterable[Agent],
    now: float,
    policy: HealthPolicy,
    routers_per_agent: Mapping[str, int] | None = None,
) -> dict[str, Verdict]:
    """The verdict for every agent in ``agents`` that has been observed."""
    counts = routers_per_agent or {}
    return {
        a.id: _verdict(a, state.tracks[a.id], now, policy, counts.get(a.id, 0))
        for a in agents
        if a.id in state.tracks
    }


def _verdict(
    agent: Agent, track: AgentTrack, now: float, policy: HealthPolicy, routers: int
) -> Verdict:
    if not agent.admin_state_up:
        return Verdict.DISABLED
    if track.restarted_at is not None and now - track.restarted_at < policy.restart_grace(routers):
        return Verdict.GRACE
    silent_long_enough = track.silence(now) > policy.agent_down_time
    if silent_long_enough and track.stale_observations >= policy.dead_after_observations:
        return Verdict.DEAD
    if track.stale_observations > 0:
        return Verdict.SUSPECT
    return Verdict.ALIVE if track.beat_seen else Verdict.OBSERVING


def dead_candidates(verdict_of: Mapping[str, Verdict]) -> list[str]:
    """The agents about to be acted on (DEAD), sorted: probe their data plane first."""
    return sorted(aid for aid, v in verdict_of.items() if v == Verdict.DEAD)


def mark_partitioned(
    verdict_of: Mapping[str, Verdict], answering: Collection[str]
) -> dict[str, Verdict]:
    """DEAD agents in ``answering`` (agent ids whose data plane answered) become PARTITIONED."""
    return {
        aid: Verdict.PARTITIONED if v == Verdict.DEAD and aid in answering else v
        for aid, v in verdict_of.items()
    }


def confirm_candidates(
    state: HealthState, verdict_of: Mapping[str, Verdict], now: float, policy: HealthPolicy
) -> list[str]:
    """SUSPECT agents late on ``dead_after_observations`` consecutive observations (sorted),
    which the data plane may confirm dead; none while any fleet gate holds (gates first)."""
    if fleet_halts(state, verdict_of, now, policy):
        return []
    n = policy.dead_after_observations
    late = {aid for aid, t in state.tracks.items() if t.stale_observations >= n}
    return sorted(aid for aid, v in verdict_of.items() if v == Verdict.SUSPECT and aid in late)


def confirm_dead(
    verdict_of: Mapping[str, Verdict], candidates: Collection[str], dark: Collection[str]
) -> dict[str, Verdict]:
    """SUSPECT ``candidates`` (``confirm_candidates``) in ``dark`` (agent ids whose probed
    gateways all failed to answer) become DEAD; every other verdict stays."""
    return {
        aid: Verdict.DEAD if v == Verdict.SUSPECT and aid in candidates and aid in dark else v
        for aid, v in verdict_of.items()
    }


def summarize(verdict_of: Mapping[str, Verdict]) -> dict[str, int]:
    """How many agents have each verdict; every verdict is present (for metrics)."""
    return {v.value: sum(1 for x in verdict_of.values() if x is v) for v in Verdict}


# --- gates ---------------------------------------------------------------------------


def fleet_halts(
    state: HealthState, verdict_of: Mapping[str, Verdict], now: float, policy: HealthPolicy
) -> list[Halt]:
    """Every gate that holds now, most telling first (all of them go to logs and metrics).

    The judged agents are those in ``verdict_of`` that are observed and not
    DISABLED. Zones are judged apart only when there are several.
    """
    judged = [
        (aid, state.tracks[aid])
        for aid, v in sorted(verdict_of.items())
        if v != Verdict.DISABLED and aid in state.tracks
    ]
    zones = sorted({t.zone for _, t in judged})
    zones = zones if len(zones) > 1 else []
    members = {z: [(aid, t) for aid, t in judged if t.zone == z] for z in zones}
    candidates = [
        _broad_halt(state.fleet, judged, now, policy, None),
        *(_broad_halt(state.zones.get(z, Outage()), members[z], now, policy, z) for z in zones),
        _jump_halt(state.clock_jump, now, policy),
        _grace_halt(state.fleet, now, policy, None),
        *(_grace_halt(state.zones.get(z, Outage()), now, policy, z) for z in zones),
    ]
    return [h for h in candidates if h is not None]


def _broad_halt(
    outage: Outage,
    members: list[tuple[str, AgentTrack]],
    now: float,
    policy: HealthPolicy,
    zone: str | None,
) -> Halt | None:
    late = _late(members, now, policy)
    broad_now = len(members) > 1 and _looks_broad(len(late), len(members), policy)
    if outage.since is None and not broad_now:
        return None
    evidence = {"dead_agents": late, "judged_agents": len(members), "since": outage.since}
    if zone is None:
        return Halt(
            HaltReason.CONTROL_PLANE_SUSPECT,
            f"{len(late)} of {len(members)} agents missed heartbeats at once: suspect the "
            "control plane (message bus, database), not the agents; not moving routers",
            evidence,
        )
    return Halt(
        HaltReason.AZ_OUTAGE,
        f"{len(late)} of {len(members)} agents in availability zone {zone} missed heartbeats "
        "at once: suspect the zone's network or message bus, not the agents; not moving routers",
        {"zone": zone, **evidence},
    )


def _jump_halt(jump: ClockJump | None, now: float, policy: HealthPolicy) -> Halt | None:
    if jump is None or now - jump.at >= policy.agent_down_time:
        return None
    whose = "our wall clock" if jump.source == ClockSource.LOCAL else "the server's clock"
    wait = policy.agent_down_time - (now - jump.at)
    return Halt(
        HaltReason.CLOCK_JUMP,
        f"{whose} jumped {jump.seconds:+.0f} s {now - jump.at:.0f} s ago; waiting {wait:.0f} s "
        "more (one agent_down_time) before acting",
        {"source": jump.source.value, "seconds": jump.seconds, "at": jump.at},
    )


def _grace_halt(outage: Outage, now: float, policy: HealthPolicy, zone: str | None) -> Halt | None:
    if outage.since is not None or outage.ended_at is None:
        return None
    where = "" if zone is None else f" in availability zone {zone}"
    ago = now - outage.ended_at
    wait = max(0.0, policy.agent_down_time - ago)
    return Halt(
        HaltReason.RECOVERY_GRACE,
        f"a broad outage{where} ended {ago:.0f} s ago; waiting {wait:.0f} s more "
        "(one agent_down_time) before acting",
        {"outage_ended_at": outage.ended_at, **({} if zone is None else {"zone": zone})},
    )


def snapshot_gate(read_ok: bool, read_seconds: float, interval: float) -> Halt | None:
    """A Halt when this cycle's snapshot cannot be trusted: the read failed or took too long."""
    if read_ok and math.isfinite(read_seconds) and read_seconds <= interval:
        return None
    what = "failed" if not read_ok else f"took {read_seconds:.1f} s, more than the {interval:g} s"
    return Halt(
        HaltReason.STALE_SNAPSHOT,
        f"reading the cloud {what} interval: not acting on stale data",
        {"read_ok": read_ok, "read_seconds": read_seconds, "interval": interval},
    )


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
