"""Outage windows, loss, latency and the gate, computed from synthetic sample streams."""

from __future__ import annotations

import random

import pytest
from tests.probe.fold import analyze, transitions_of

from l3ha.probe.analysis import (
    Change,
    InOrder,
    Sample,
    TargetTracker,
    gate_violations,
    percentile,
)


def stream(
    target: str, pattern: str, interval: float = 0.1, origin: float = 100.0, skew: float = 0.0005
) -> list[Sample]:
    """One sample per character: '.' success (1 ms), 'x' failure (timeout); each starts
    ``skew`` after it was due."""
    return [
        Sample(
            target,
            seq,
            origin + seq * interval,
            origin + seq * interval + skew,
            1_700_000_000.0 + seq * interval,
            0.001 if ch == "." else 0.5,
            ch == ".",
            "" if ch == "." else "timeout",
        )
        for seq, ch in enumerate(pattern)
    ]


def test_outage_runs_from_first_failure_to_first_success_after_it() -> None:
    samples = stream("tcp a", "...xxx..")
    [block] = analyze(samples, origin=100.0, until=100.8)
    assert block["outage_count"] == 1
    outage = block["outages"][0]
    assert outage["start_s"] == pytest.approx(0.3005)
    assert outage["end_s"] == pytest.approx(0.6005)
    assert outage["duration_s"] == pytest.approx(0.3)
    assert outage["failed_samples"] == 3
    assert outage["reason"] == "timeout"
    assert block["loss_pct"] == pytest.approx(37.5)


def test_several_outages_give_total_and_longest() -> None:
    samples = stream("icmp b", ".x..xxx.xx.")
    [block] = analyze(samples, origin=100.0, until=101.1)
    assert block["outage_count"] == 3
    assert block["total_downtime_s"] == pytest.approx(0.1 + 0.3 + 0.2)
    assert block["longest_outage_s"] == pytest.approx(0.3)
    assert not block["open_outage"]


def test_outage_open_at_the_end_lasts_until_the_stop() -> None:
    samples = stream("dns c", "..xxx")
    [block] = analyze(samples, origin=100.0, until=100.6)
    assert block["open_outage"]
    assert block["outages"][0]["end_s"] is None
    assert block["longest_outage_s"] == pytest.approx(100.6 - 100.2005)


def test_a_target_that_never_answered_has_no_latency() -> None:
    [block] = analyze(stream("http d", "xxxx"), origin=100.0, until=100.4)
    assert block["latency_ms"] == {"p50": None, "p90": None, "p99": None, "max": None}
    assert block["loss_pct"] == 100.0


def test_analysis_does_not_depend_on_completion_order() -> None:
    samples = stream("tcp a", "..xx.x...xxxx..") + stream("tcp b", ".....x.....")
    shuffled = samples[:]
    random.Random(7).shuffle(shuffled)
    ordered = analyze(samples, 100.0, 101.5, ["tcp a", "tcp b"])
    assert analyze(shuffled, 100.0, 101.5, ["tcp a", "tcp b"]) == ordered


def test_in_order_holds_early_finishers_back() -> None:
    s = stream("t", "....")
    order = InOrder()
    assert order.push(s[1]) == []
    assert order.push(s[2]) == []
    assert order.push(s[0]) == [s[0], s[1], s[2]]
    assert order.push(s[3]) == [s[3]]


def test_tracker_reports_down_and_up_with_downtime() -> None:
    tracker = TargetTracker("tcp a")
    changes = [tracker.feed(s) for s in stream("tcp a", ".xx.")]
    assert changes[0] is None and changes[2] is None
    assert changes[1] is not None and changes[1].change is Change.DOWN
    assert changes[1].reason == "timeout"
    assert changes[3] is not None and changes[3].change is Change.UP
    assert changes[3].downtime == pytest.approx(0.2)


def test_slow_successes_are_counted() -> None:
    tracker = TargetTracker("tcp a", slow_after=0.01)
    samples = stream("tcp a", "...")
    slow = Sample("tcp a", 3, 100.3, 100.3, 0.0, 0.2, True)
    for sample in [*samples, slow]:
        tracker.feed(sample)
    assert tracker.summary(100.0, 100.4)["slow_successes"] == 1


def test_transitions_of_interleave_targets_in_time_order() -> None:
    samples = stream("a", ".x.", origin=100.0) + stream("b", "x..", origin=100.05)
    changes = [(c.target, c.change) for c in transitions_of(samples)]
    assert changes == [
        ("b", Change.DOWN),
        ("a", Change.DOWN),
        ("b", Change.UP),
        ("a", Change.UP),
    ]


def test_percentiles_interpolate() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == pytest.approx(50.5)
    assert percentile(values, 99) == pytest.approx(99.01)
    assert percentile(values, 100) == 100.0
    assert percentile([], 50) is None
    [block] = analyze(stream("t", "...."), 100.0, 100.4)
    assert block["latency_ms"]["p50"] == pytest.approx(1.0)


def test_gate_lists_every_exceeding_target() -> None:
    blocks = analyze(stream("a", ".xxx.") + stream("b", ".x..."), 100.0, 100.5, ["a", "b"])
    assert gate_violations(blocks, max_outage=0.5, max_loss=60) == []
    lines = gate_violations(blocks, max_outage=0.15, max_loss=30)
    assert lines == [
        "a: longest outage 0.300 s > 0.15 s",
        "a: loss 60.00 % > 30 %",
    ]


def test_a_target_without_samples_is_not_measured_and_fails_any_gate() -> None:
    blocks = analyze(
        stream("tcp a", "...."), origin=100.0, until=100.4, targets=["tcp a", "http b"]
    )
    unmeasured = blocks[1]
    assert unmeasured["samples"] == 0 and unmeasured["loss_pct"] is None
    assert gate_violations(blocks, None, None) == []
    expected = ["http b: no sample taken, so it was not measured"]
    assert gate_violations(blocks, None, 100.0) == expected
    assert gate_violations(blocks, 1000.0, None) == expected


def test_a_dropped_sample_releases_the_later_ones_uncounted() -> None:
    first, second, third = stream("tcp a", ".x.")
    order = InOrder()
    assert order.push(third) == []
    assert order.push(first) == [first]
    assert order.skip(second.seq) == [third]
