"""A token bucket: at most ``rate`` events per second, ``burst`` at once. Pure (injected clock).

It takes time from an injected clock (``l3ha.clock.Clock``); ``try_take`` and
``wait_time`` never sleep, ``take`` sleeps on that clock. The executor paces
moves with one (``--rate``) and the cloud adapter paces API calls with
another (``--api-rate``), shared by every thread that calls the API.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the protocol only: the bucket never reads a clock of its own
    from l3ha.clock import Clock


class TokenBucket:
    """At most ``rate`` events per second on average, at most ``burst`` at once.

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
