"""Has a restarted agent proven itself? The judgement of ``--stable-for``. Pure.

After the maintenance command ends, l3ha watches the agent's heartbeat with
its own observation (``l3ha.health.observe``: the heartbeat value *changing*,
timed on our monotonic clock; never our clock against the server's
timestamp). The first observation is the baseline. The agent is alive from
the first heartbeat change seen after it, and stays alive while it never
misses a heartbeat (silent for no longer than ``policy.late_after``); a
missed heartbeat starts the count again. It is STABLE once alive for
``stable_for`` seconds with at least two heartbeat changes seen (it keeps
reporting, it did not report once and die). A restart shows as a new
``started_at``; an agent started while the message bus is down never
changes its heartbeat and never becomes stable.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from l3ha.health import AgentTrack, HealthPolicy


class Proof(StrEnum):
    """Where the proof of one agent stands."""

    SILENT = "silent"  # no heartbeat change seen since the baseline
    PROVING = "proving"  # alive, not yet for long enough
    STABLE = "stable"


@dataclass(frozen=True)
class Stability:
    """What the proof remembers between observations (times: our monotonic clock).

    Start from ``Stability(baseline_started_at=...)`` with the agent's
    ``started_at`` from before the command, so that a restart during it shows.
    """

    baseline_started_at: str | None = None
    last_heartbeat: str | None = None
    alive_since: float | None = None
    changes: int = 0
    restarted: bool = False
    missed: int = 0  # times the agent missed a heartbeat after it had reported

    def fold(self, track: AgentTrack, now: float, policy: HealthPolicy) -> Stability:
        """Fold one observation (the agent's ``AgentTrack`` after ``health.observe``)."""
        if self.last_heartbeat is None:  # the baseline
            before = self.baseline_started_at or track.started_at
            return Stability(
                baseline_started_at=before,
                last_heartbeat=track.heartbeat,
                restarted=track.started_at != before,
            )
        state = self
        if track.started_at != self.baseline_started_at:
            state = replace(state, restarted=True)
        if track.heartbeat != self.last_heartbeat:
            since = state.alive_since if state.alive_since is not None else track.changed_at
            state = replace(
                state, last_heartbeat=track.heartbeat, alive_since=since, changes=state.changes + 1
            )
        if state.alive_since is not None and track.silence(now) > policy.late_after:
            state = replace(state, alive_since=None, changes=0, missed=state.missed + 1)
        return state

    def proof(self, now: float, stable_for: float) -> Proof:
        if self.alive_since is None:
            return Proof.SILENT
        if now - self.alive_since >= stable_for and self.changes >= 2:
            return Proof.STABLE
        return Proof.PROVING

    def alive_for(self, now: float) -> float:
        return 0.0 if self.alive_since is None else now - self.alive_since


def failure_reason(
    state: Stability, host: str, now: float, waited: float, stable_for: float
) -> str:
    """Why the agent on ``host`` did not prove stable within ``waited`` seconds."""
    if state.alive_since is None and state.missed == 0:
        return (
            f"the agent on {host} has not reported since the command ended (heartbeat unchanged "
            f"for {waited:.0f} s): it may have started while the message bus was down; "
            "restart it once the bus is up"
        )
    if state.alive_since is None:
        return (
            f"the agent on {host} reported, then missed heartbeats ({state.missed} time(s)) "
            f"within {waited:.0f} s: not stable"
        )
    return (
        f"the agent on {host} was alive for only {state.alive_for(now):.0f} s of the "
        f"{stable_for:g} s asked within {waited:.0f} s"
    )
