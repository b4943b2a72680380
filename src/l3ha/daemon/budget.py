"""The daemon's move budget across cycles: a token bucket with a lower rate under disruption. Pure.

Tokens refill at ``per_minute / 60`` per second, up to ``per_cycle`` (the
most one cycle may move). While more than one agent is disrupted (dead or
suspect) the refill rate drops to ``disrupted_per_minute``, as Kubernetes
lowers its eviction rate for a partially disrupted zone: one dead node is
ordinary, several at once may be the beginning of something larger. Time
comes from the caller (monotonic seconds); nothing here sleeps.
"""

from __future__ import annotations

import math


class MoveBudget:
    """How many moves the daemon may start now (see the module docstring)."""

    def __init__(
        self, per_minute: float, disrupted_per_minute: float, per_cycle: int, now: float
    ) -> None:
        if per_minute <= 0 or disrupted_per_minute <= 0 or per_cycle < 1:
            raise ValueError("move rates must be positive and the per-cycle cap at least 1")
        self.per_minute = per_minute
        self.disrupted_per_minute = min(disrupted_per_minute, per_minute)
        self.per_cycle = per_cycle
        self._tokens = float(per_cycle)
        self._stamp = now
        self._disrupted = False

    def rate(self) -> float:
        """Moves per minute in force now."""
        return self.disrupted_per_minute if self._disrupted else self.per_minute

    def available(self, now: float, disrupted_agents: int) -> int:
        """Moves that may start now, given how many agents are disrupted."""
        self._refill(now)
        self._disrupted = disrupted_agents > 1
        return min(self.per_cycle, math.floor(self._tokens))

    def spend(self, moves: int, now: float) -> None:
        """Moves were started."""
        self._refill(now)
        self._tokens = max(0.0, self._tokens - moves)

    def _refill(self, now: float) -> None:
        elapsed = max(0.0, now - self._stamp)
        self._tokens = min(float(self.per_cycle), self._tokens + elapsed * self.rate() / 60.0)
        self._stamp = now
