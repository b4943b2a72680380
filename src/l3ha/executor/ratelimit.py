"""Budgets for the executor: a per-target in-flight limit, the token bucket, and the
admission of one run that the dispatcher uses for every kind (``RunBudgets``). Pure.

The token bucket lives in ``l3ha.tokenbucket`` (the cloud adapter paces API
calls with one too) and is re-exported here. ``TargetSlots`` never blocks.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from l3ha.tokenbucket import TokenBucket

if TYPE_CHECKING:
    from l3ha.clock import Clock
    from l3ha.executor.options import ExecutorOptions

__all__ = ["RunBudgets", "TargetSlots", "TokenBucket"]


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


class RunBudgets:
    """One run's budgets, the same for every kind: at most ``concurrency`` moves writing
    at once, one move per object (router, network) at a time, ``per_target_inflight``
    moves per target not yet ready, and the token bucket of moves started per second.

    ``cond`` guards ``writing`` and ``busy``; the dispatcher waits on it for room.
    """

    def __init__(self, options: ExecutorOptions, clock: Clock) -> None:
        self.concurrency = options.concurrency
        self.cond = threading.Condition()
        self.writing = 0  # moves in their write phase
        self.busy: set[str] = set()  # objects with a move running
        self.slots = TargetSlots(options.per_target_inflight)
        self.bucket = TokenBucket(options.rate, options.bucket_burst, clock)

    def has_room(self, obj: str, target: str | None) -> bool:
        """Whether a move of ``obj`` to ``target`` may start now (call under ``cond``)."""
        return (
            self.writing < self.concurrency
            and obj not in self.busy
            and (target is None or self.slots.has_room(target))
        )

    def claim(self, obj: str, target: str | None) -> str | None:
        """Take a write slot, the object and a target slot (call under ``cond``); the
        target whose slot was taken, if any."""
        self.busy.add(obj)
        self.writing += 1
        return target if target is not None and self.slots.try_acquire(target) else None

    def written(self) -> None:
        """A move's write phase is over (its readiness may still be awaited)."""
        with self.cond:
            self.writing -= 1
            self.cond.notify_all()

    def done(self, obj: str, slot: str | None) -> None:
        """A move has its outcome: free its object and its target slot."""
        with self.cond:
            if slot is not None:
                self.slots.release(slot)
            self.busy.discard(obj)
            self.cond.notify_all()
