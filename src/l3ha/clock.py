"""Injected time: a wall clock and a monotonic clock behind one small protocol.

``SystemClock`` reads the real clocks (I/O: system time, sleeping).
``ManualClock`` is advanced by hand and never sleeps, for tests and simulations.
The pure core never reads a clock; it takes ``now`` as an argument.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """Where time comes from."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards."""
        ...

    def wall(self) -> datetime:
        """The current UTC time, timezone-aware."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait (or pretend to wait) ``seconds``."""
        ...


class SystemClock:
    """The real clocks of this machine."""

    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class ManualClock:
    """A clock that moves only when told to; ``sleep`` advances it at once."""

    def __init__(self, start: datetime | None = None, monotonic_start: float = 1000.0) -> None:
        self._wall = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._mono = monotonic_start
        self._lock = threading.Lock()

    def monotonic(self) -> float:
        with self._lock:
            return self._mono

    def wall(self) -> datetime:
        with self._lock:
            return self._wall

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        """Move both clocks forward by ``seconds``."""
        if seconds < 0:
            raise ValueError("a clock does not go backwards")
        with self._lock:
            self._mono += seconds
            self._wall += timedelta(seconds=seconds)
