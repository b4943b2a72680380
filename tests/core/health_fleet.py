"""A simulated fleet for the health tests: agents that report on their own phases, a
server that stamps the reports with its own clock, and l3ha observing on its own."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime

from hypothesis import HealthCheck, settings

from l3ha.health import HealthPolicy, HealthState, Verdict, fleet_halts, observe, verdicts
from l3ha.model import Agent, Halt, HaltReason

POLICY = HealthPolicy(agent_down_time=75.0, dead_after_observations=3)
D = POLICY.agent_down_time
R = POLICY.report_interval
EPOCH = 1_700_000_000.0
FOREVER = math.inf
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass
class Fleet:
    """Simulated agents: heartbeat phases, silences, zones, and the clocks."""

    phases: dict[str, float]
    zones: dict[str, str] = field(default_factory=dict)
    silences: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    restarts: dict[str, float] = field(default_factory=dict)  # agent -> time it restarted
    server_steps: list[tuple[float, float]] = field(default_factory=list)  # (at, seconds)
    wall_steps: list[tuple[float, float]] = field(default_factory=list)
    server_drift: float = 0.0  # server clock rate error (1e-4: 100 ppm)
    interval: float = 10.0

    def last_beat(self, agent: str, t: float) -> float:
        phase = self.phases[agent]
        tick = phase + math.floor((t - phase) / R) * R
        while True:
            window = next((w for w in self.silences.get(agent, []) if w[0] <= tick < w[1]), None)
            if window is None:
                return tick
            tick = phase + (math.ceil((window[0] - phase) / R) - 1) * R

    def stamp(self, written: float) -> str:
        server = written * (1 + self.server_drift) + sum(
            s for at, s in self.server_steps if at <= written
        )
        return datetime.fromtimestamp(EPOCH + server, UTC).strftime("%Y-%m-%d %H:%M:%S")

    def wall(self, t: float) -> float:
        return EPOCH + 1234.5 + t + sum(s for at, s in self.wall_steps if at <= t)

    def agents(self, t: float) -> list[Agent]:
        return [
            Agent(
                id=a,
                host=a,
                availability_zone=self.zones.get(a, "nova"),
                heartbeat_timestamp=self.stamp(self.last_beat(a, t)),
                started_at="s1" if t >= self.restarts.get(a, FOREVER) else "s0",
            )
            for a in sorted(self.phases)
        ]

    def run(self, until: float, start: float = 0.0, state: HealthState | None = None) -> list[Step]:
        """Observe every ``interval`` from ``start`` to ``until`` (inclusive)."""
        state = state or HealthState()
        steps = []
        t = start
        while t <= until:
            agents = self.agents(t)
            state = observe(state, agents, t, POLICY, wall=self.wall(t))
            v = verdicts(state, agents, t, POLICY)
            steps.append(Step(t, state, v, fleet_halts(state, v, t, POLICY)))
            t += self.interval
        return steps


@dataclass
class Step:
    t: float
    state: HealthState
    verdicts: dict[str, Verdict]
    halts: list[Halt]

    @property
    def reasons(self) -> set[HaltReason]:
        return {h.reason for h in self.halts}


def fleet(n: int, **kwargs: object) -> Fleet:
    """``n`` agents ``n00``.. with phases spread over one report interval."""
    return Fleet({f"n{i:02d}": (i * 7.3) % R for i in range(n)}, **kwargs)  # type: ignore[arg-type]


def silence(agents: list[str], start: float, end: float = FOREVER) -> dict[str, list[tuple]]:  # type: ignore[type-arg]
    return {a: [(start, end)] for a in agents}


def at(steps: list[Step], t: float) -> Step:
    return next(s for s in steps if s.t >= t)


# --- single agents -------------------------------------------------------------------
