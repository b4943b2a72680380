"""The sampling grid: when each target's next sample is due, and the loop that starts them.

``Grid`` is pure arithmetic. ``run_grid`` (I/O: the monotonic clock and asyncio
sleeps) starts every sample as a task of its own at its due time, so a slow or
hung sample never delays the next one. Targets are staggered evenly across the
interval (target i of n is due at ``origin + k*interval + i*interval/n``), so a
thousand targets at 1 Hz mean one connect per millisecond, not a thousand at
once. A loop that falls more than one interval behind skips to the present and
counts the samples it skipped, rather than firing a burst of stale ones.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

Launch = Callable[[int, int, float], None]
"""``launch(target_index, seq, due)``: start one sample now."""

BURST = 64  # samples started back to back before yielding to the event loop


@dataclass(frozen=True, slots=True)
class Grid:
    """Slot j belongs to target ``j % targets``, round ``j // targets``."""

    targets: int
    interval: float
    origin: float

    @property
    def step(self) -> float:
        return self.interval / self.targets

    def due(self, slot: int) -> float:
        return self.origin + slot * self.step

    def owner(self, slot: int) -> tuple[int, int]:
        """(target index, round) of a slot."""
        return slot % self.targets, slot // self.targets

    def first_slot_at_or_after(self, mono: float) -> int:
        return max(0, math.ceil((mono - self.origin) / self.step - 1e-9))


@dataclass
class GridStats:
    """What the grid loop did: samples started and skipped, and where it stopped."""

    started: int = 0
    skipped: int = 0
    stopped_at: float = 0.0


async def run_grid(
    grid: Grid,
    launch: Launch,
    stats: GridStats,
    until: float | None = None,
    now: Callable[[], float] = time.monotonic,
) -> None:
    """Start samples on the grid until ``until`` (monotonic) or until cancelled.

    Each target keeps its own consecutive ``seq`` even when slots are skipped.
    """
    seqs = [0] * grid.targets
    slot = 0
    burst = 0
    try:
        while until is None or grid.due(slot) < until:
            delay = grid.due(slot) - now()
            if delay > 0:
                burst = 0
                await asyncio.sleep(delay)
            elif -delay > grid.interval:
                slot = _skip(grid, slot, now(), stats)
                continue
            index, _ = grid.owner(slot)
            launch(index, seqs[index], grid.due(slot))
            seqs[index] += 1
            stats.started += 1
            slot += 1
            burst += 1
            if burst >= BURST:
                burst = 0
                await asyncio.sleep(0)
        stats.stopped_at = until if until is not None else now()
    except asyncio.CancelledError:
        stats.stopped_at = now() if until is None else min(now(), until)
        raise


def _skip(grid: Grid, slot: int, current: float, stats: GridStats) -> int:
    resume = grid.first_slot_at_or_after(current)
    stats.skipped += resume - slot
    return resume
