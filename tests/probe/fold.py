"""Folding a finished list of samples with the probe's own ``TargetTracker`` (test helpers).

The probe folds samples as they complete; these fold a whole synthetic stream at once,
so the tests can state what a stream of successes and failures must give.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from l3ha.probe.analysis import Sample, TargetTracker, Transition


def analyze(
    samples: Iterable[Sample], origin: float, until: float, targets: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Per-target summaries of a finished sample list (any order), targets in given order."""
    by_target: dict[str, list[Sample]] = {name: [] for name in targets}
    for sample in samples:
        by_target.setdefault(sample.target, []).append(sample)
    result = []
    for name, items in by_target.items():
        tracker = TargetTracker(name)
        for sample in sorted(items, key=lambda s: (s.start, s.seq)):
            tracker.feed(sample)
        result.append(tracker.summary(origin, until))
    return result


def transitions_of(samples: Iterable[Sample]) -> list[Transition]:
    """Every DOWN/UP change of a finished sample list, in time order."""
    trackers: dict[str, TargetTracker] = {}
    changes = []
    for sample in sorted(samples, key=lambda s: (s.start, s.seq)):
        tracker = trackers.setdefault(sample.target, TargetTracker(sample.target))
        change = tracker.feed(sample)
        if change is not None:
            changes.append(change)
    return changes
