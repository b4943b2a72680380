"""Budgets for the executor: a token bucket and a per-target in-flight limit. Pure.

Both take time from an injected clock (``l3ha.clock.Clock``) and never sleep
themselves: callers ask how long to wait and sleep on their own clock, so the
logic is tested with ``ManualClock`` without real waiting.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from l3ha.clock import Clock


class TokenBucket:
    """At most ``rate`` moves per second on average, at most ``burst`` at once.

    ``rate=None`` means unlimited. The bucket starts full. Thread-safe.
    """

    def __init__(self, rate: float | None, burst: int, clock: Clock) -> None:
        if rate is not None and rate <= 0:
            raise ValueError("rate must be positive (or None for unlimited)")
        if burst < 1:
            raise ValueError("burst must be at least 1")
        self._rate = rate
        self._burst = float(burst)
        self._clock = clock
        self._tokens = float(burst)
        self._stamp = clock.monotonic()
        self._lock = threading.Lock()

    @property
    def unlimited(self) -> bool:
        return self._rate is None

    def _refill(self) -> None:
        now = self._clock.monotonic()
        if self._rate is not None:
            self._tokens = min(self._burst, self._tokens + (now - self._stamp) * self._rate)
        self._stamp = now

    def try_take(self) -> bool:
        """Take one token if there is one; return whether it was taken."""
        if self._rate is None:
            return True
        with self._lock:
            self._refill()
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return True
            return False

    def wait_time(self) -> float:
        """Seconds until a token will be available (0 when one is available now)."""
        if self._rate is None:
            return 0.0
        with self._lock:
            self._refill()
            missing = 1.0 - self._tokens
            return max(0.0, missing / self._rate)

    def take(self) -> None:
        """Take one token, sleeping on the clock until one is available."""
        while not self.try_take():
            self._clock.sleep(max(self.wait_time(), 1e-3))


class TargetSlots:
    """How many moves are in flight per target agent, with a limit for each.

    ``limit=None`` means no per-target limit. Thread-safe; never blocks.
    """

    def __init__(self, limit: int | None) -> None:
        if limit is not None and limit < 1:
            raise ValueError("the per-target in-flight limit must be at least 1")
        self._limit = limit
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def has_room(self, target: str) -> bool:
        """Whether one more move to ``target`` would stay within the limit."""
        if self._limit is None:
            return True
        with self._lock:
            return self._counts.get(target, 0) < self._limit

    def try_acquire(self, target: str) -> bool:
        """Count one more move to ``target`` if it has room."""
        with self._lock:
            current = self._counts.get(target, 0)
            if self._limit is not None and current >= self._limit:
                return False
            self._counts[target] = current + 1
            return True

    def transfer(self, old: str, new: str) -> None:
        """Move one slot from ``old`` to ``new`` (a fallback target); may exceed the limit."""
        if old == new:
            return
        with self._lock:
            self._release_locked(old)
            self._counts[new] = self._counts.get(new, 0) + 1

    def release(self, target: str) -> None:
        """One move to ``target`` is no longer in flight."""
        with self._lock:
            self._release_locked(target)

    def _release_locked(self, target: str) -> None:
        current = self._counts.get(target, 0)
        if current <= 1:
            self._counts.pop(target, None)
        else:
            self._counts[target] = current - 1

    def in_flight(self) -> Mapping[str, int]:
        """A copy of the current counts per target."""
        with self._lock:
            return dict(self._counts)
