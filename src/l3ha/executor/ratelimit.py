"""Budgets for the executor: a per-target in-flight limit (and the token bucket). Pure.

The token bucket lives in ``l3ha.tokenbucket`` (the cloud adapter paces API
calls with one too) and is re-exported here. ``TargetSlots`` never blocks.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from l3ha.tokenbucket import TokenBucket

__all__ = ["TargetSlots", "TokenBucket"]


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
