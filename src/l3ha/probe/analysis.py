"""Outage windows, loss and latency from sample streams, and the gate verdict. Pure.

An outage window runs from the start of the first failed sample to the start
of the first successful sample after it. Samples complete out of order (a
slow sample may finish after a later fast one), so each target's samples are
put back into start order (``InOrder``) before ``TargetTracker`` folds them.
A window still open when the probe stops ends at the stop time and is marked
``open``.

A target that got no sample at all (the probe was stopped before its first
slot, or its only samples were dropped) was not measured: its ``loss_pct`` is
None (``n/a``), and any gate fails on it rather than passing it as healthy.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any


@dataclass(frozen=True, slots=True)
class Sample:
    """One attempt on one target: when it was due and started, how long it took, its result.

    ``scheduled`` and ``start`` are monotonic seconds, ``wall`` is the start as
    UNIX seconds, ``elapsed`` is the time until the result (success or failure).
    """

    target: str
    seq: int
    scheduled: float
    start: float
    wall: float
    elapsed: float
    ok: bool
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "seq": self.seq,
            "scheduled": round(self.scheduled, 6),
            "start": round(self.start, 6),
            "wall": round(self.wall, 6),
            "elapsed_ms": round(self.elapsed * 1000, 3),
            "ok": self.ok,
            "error": self.error,
        }


class Change(StrEnum):
    """A target going down or coming back."""

    DOWN = "DOWN"
    UP = "UP"


@dataclass(frozen=True, slots=True)
class Transition:
    """Target ``target`` changed state at monotonic ``mono`` (a sample's start)."""

    target: str
    change: Change
    mono: float
    wall: float
    reason: str = ""
    downtime: float = 0.0


@dataclass(frozen=True, slots=True)
class Outage:
    """One outage window; ``end`` is None while it is still open."""

    target: str
    start: float
    wall: float
    end: float | None
    failed_samples: int
    reason: str

    def duration(self, until: float) -> float:
        """Length of the window; an open one is counted up to ``until``."""
        return (self.end if self.end is not None else until) - self.start


class InOrder:
    """Releases one target's samples in sequence order, holding early finishers back."""

    def __init__(self) -> None:
        self._next = 0
        self._held: dict[int, Sample | None] = {}  # None: dropped, never to come

    def push(self, sample: Sample) -> list[Sample]:
        """Accept one finished sample; return those now releasable, in order."""
        self._held[sample.seq] = sample
        return self._release()

    def skip(self, seq: int) -> list[Sample]:
        """Sample ``seq`` will never finish (it was dropped); return those now releasable."""
        self._held[seq] = None
        return self._release()

    def _release(self) -> list[Sample]:
        ready = []
        while self._next in self._held:
            sample = self._held.pop(self._next)
            if sample is not None:
                ready.append(sample)
            self._next += 1
        return ready


@dataclass
class TargetTracker:
    """Folds one target's samples (in start order) into outages and statistics.

    ``slow_successes`` counts samples that succeeded only after ``slow_after``
    seconds: their packets were queued or retransmitted, so the real outage may
    have lasted up to one timeout longer than the measured window.
    """

    target: str
    slow_after: float = math.inf
    samples: int = 0
    failed: int = 0
    slow_successes: int = 0
    latencies: array[float] = field(default_factory=lambda: array("d"))
    outages: list[Outage] = field(default_factory=list)
    first_start: float | None = None
    _open: Outage | None = None

    def feed(self, sample: Sample) -> Transition | None:
        """Account one sample; return the state change it causes, if any."""
        self.samples += 1
        if self.first_start is None:
            self.first_start = sample.start
        if sample.ok:
            self.latencies.append(sample.elapsed)
            self.slow_successes += sample.elapsed >= self.slow_after
            return self._close(sample)
        self.failed += 1
        if self._open is None:
            self._open = Outage(self.target, sample.start, sample.wall, None, 1, sample.error)
            return Transition(self.target, Change.DOWN, sample.start, sample.wall, sample.error)
        self._open = replace(self._open, failed_samples=self._open.failed_samples + 1)
        return None

    def _close(self, sample: Sample) -> Transition | None:
        if self._open is None:
            return None
        outage = replace(self._open, end=sample.start)
        self.outages.append(outage)
        self._open = None
        downtime = sample.start - outage.start
        return Transition(self.target, Change.UP, sample.start, sample.wall, "", downtime)

    @property
    def current(self) -> Outage | None:
        """The outage in progress, if the target is down now."""
        return self._open

    def all_outages(self) -> list[Outage]:
        """Closed outages plus the open one, if any."""
        return self.outages + ([self._open] if self._open is not None else [])

    def summary(self, origin: float, until: float) -> dict[str, Any]:
        """The per-target block of ``summary.json``; times relative to ``origin``."""
        outages = self.all_outages()
        durations = [o.duration(until) for o in outages]
        return {
            "target": self.target,
            "samples": self.samples,
            "failed": self.failed,
            "loss_pct": round(100.0 * self.failed / self.samples, 3) if self.samples else None,
            "outage_count": len(outages),
            "total_downtime_s": round(sum(durations), 6),
            "longest_outage_s": round(max(durations, default=0.0), 6),
            "open_outage": any(o.end is None for o in outages),
            "slow_successes": self.slow_successes,
            "latency_ms": latency_block(self.latencies),
            "outages": [outage_json(o, origin, until) for o in outages],
        }


def outage_json(outage: Outage, origin: float, until: float) -> dict[str, Any]:
    """One outage window as JSON, with start/end relative to ``origin``."""
    return {
        "start_s": round(outage.start - origin, 6),
        "end_s": None if outage.end is None else round(outage.end - origin, 6),
        "duration_s": round(outage.duration(until), 6),
        "start_wall": round(outage.wall, 6),
        "failed_samples": outage.failed_samples,
        "reason": outage.reason,
        "open": outage.end is None,
    }


def percentile(values: Sequence[float], pct: float) -> float | None:
    """Linear-interpolated percentile of already sorted values; None when empty."""
    if not values:
        return None
    rank = (len(values) - 1) * pct / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (rank - low)


def latency_block(seconds: Iterable[float]) -> dict[str, float | None]:
    """p50/p90/p99/max in milliseconds (None when there was no success)."""
    ordered = sorted(seconds)
    block: dict[str, float | None] = {}
    for name, pct in (("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("max", 100.0)):
        value = percentile(ordered, pct)
        block[name] = None if value is None else round(value * 1000, 3)
    return block


def unsampled(targets: Sequence[dict[str, Any]]) -> list[str]:
    """Names of the targets that got no sample at all."""
    return [block["target"] for block in targets if block["samples"] == 0]


def gate_violations(
    targets: Sequence[dict[str, Any]], max_outage: float | None, max_loss: float | None
) -> list[str]:
    """One line per target that exceeds the gate (empty: the gate passes).

    With any gate given, a target without a single sample fails it: it was not measured.
    """
    lines = []
    for block in targets:
        if block["samples"] == 0:
            if max_outage is not None or max_loss is not None:
                lines.append(f"{block['target']}: no sample taken, so it was not measured")
            continue
        if max_outage is not None and block["longest_outage_s"] > max_outage:
            lines.append(
                f"{block['target']}: longest outage {block['longest_outage_s']:.3f} s "
                f"> {max_outage:g} s"
            )
        if max_loss is not None and block["loss_pct"] > max_loss:
            lines.append(f"{block['target']}: loss {block['loss_pct']:.2f} % > {max_loss:g} %")
    return lines
