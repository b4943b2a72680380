"""The executor's budgets: token bucket and per-target in-flight slots, on a ManualClock.

``--rate R`` gets a bucket of ``max(1, ceil(R))``: after the first second no
more than R moves start per second (a fixed burst of 10 let ``--rate 1``
start ten moves at once).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from tests.executor.memcloud_executor import evac_cloud, evac_plan, run

from l3ha.clock import ManualClock
from l3ha.executor import ExecutorOptions, MoveOutcome
from l3ha.executor.ratelimit import TargetSlots, TokenBucket


def test_bucket_starts_full_and_allows_a_burst() -> None:
    bucket = TokenBucket(rate=2.0, burst=3, clock=ManualClock())
    assert [bucket.try_take() for _ in range(4)] == [True, True, True, False]


def test_bucket_refills_at_the_rate() -> None:
    clock = ManualClock()
    bucket = TokenBucket(rate=4.0, burst=1, clock=clock)
    assert bucket.try_take()
    assert bucket.wait_time() == pytest.approx(0.25)
    clock.advance(0.2)
    assert not bucket.try_take()
    assert bucket.wait_time() == pytest.approx(0.05)
    clock.advance(0.05)
    assert bucket.try_take()


def test_bucket_never_holds_more_than_burst_after_idling() -> None:
    clock = ManualClock()
    bucket = TokenBucket(rate=10.0, burst=2, clock=clock)
    clock.advance(3600)
    assert [bucket.try_take() for _ in range(3)] == [True, True, False]


def test_take_sleeps_on_the_clock_for_the_average_rate() -> None:
    clock = ManualClock()
    bucket = TokenBucket(rate=5.0, burst=1, clock=clock)
    start = clock.monotonic()
    for _ in range(11):
        bucket.take()
    assert clock.monotonic() - start == pytest.approx(2.0, abs=0.01)


def test_unlimited_bucket_never_waits() -> None:
    clock = ManualClock()
    bucket = TokenBucket(rate=None, burst=1, clock=clock)
    assert all(bucket.try_take() for _ in range(1000))
    assert bucket.wait_time() == 0.0
    assert bucket.unlimited


@pytest.mark.parametrize(("rate", "burst"), [(0.0, 1), (-1.0, 1), (1.0, 0)])
def test_bucket_rejects_nonsense(rate: float, burst: int) -> None:
    with pytest.raises(ValueError):
        TokenBucket(rate=rate, burst=burst, clock=ManualClock())


def test_slots_limit_each_target_separately() -> None:
    slots = TargetSlots(limit=2)
    assert slots.try_acquire("a") and slots.try_acquire("a")
    assert not slots.try_acquire("a")
    assert not slots.has_room("a")
    assert slots.try_acquire("b")
    slots.release("a")
    assert slots.has_room("a")
    assert slots.in_flight() == {"a": 1, "b": 1}


def test_slot_transfer_moves_the_count_to_the_fallback() -> None:
    slots = TargetSlots(limit=1)
    assert slots.try_acquire("a")
    slots.transfer("a", "b")
    assert slots.in_flight() == {"b": 1}
    assert slots.has_room("a")


def test_no_limit_means_always_room() -> None:
    slots = TargetSlots(limit=None)
    assert all(slots.try_acquire("a") for _ in range(100))
    with pytest.raises(ValueError):
        TargetSlots(limit=0)


@pytest.mark.parametrize(("rate", "burst"), [(1.0, 1), (2.5, 3), (8.0, 8), (0.5, 1), (None, 1)])
def test_burst_defaults_to_the_rate_rounded_up(rate: float | None, burst: int) -> None:
    assert ExecutorOptions(rate=rate).bucket_burst == burst
    assert ExecutorOptions(rate=rate, burst=4).bucket_burst == 4  # given: used as is


def greedy_starts(rate: float, burst: int, seconds: float) -> list[float]:
    """When a dispatcher that starts a move whenever it may would start them."""
    clock = ManualClock(monotonic_start=0.0)
    bucket = TokenBucket(rate, burst, clock)
    starts: list[float] = []
    while clock.monotonic() < seconds:
        if bucket.try_take():
            starts.append(clock.monotonic())
        else:
            clock.sleep(max(bucket.wait_time(), 1e-3))
    return starts


@pytest.mark.parametrize("rate", [1.0, 2.5, 8.0])
def test_with_the_default_burst_at_most_rate_starts_per_second_after_the_first(
    rate: float,
) -> None:
    burst = ExecutorOptions(rate=rate).bucket_burst  # what `--rate` gets without --burst
    starts = greedy_starts(rate, burst, 20.0)
    for second in range(1, 20):
        in_window = [t for t in starts if second <= t < second + 1 - 1e-9]
        assert len(in_window) <= math.ceil(rate), (second, in_window)
    for horizon in (1.0, 5.0, 19.0):
        started = sum(1 for t in starts if t < horizon - 1e-9)
        assert started <= math.ceil(rate) + rate * horizon + 1e-9  # at once: ceil(rate)
    assert len(starts) >= rate * 19  # and it does keep the rate


def test_rate_one_starts_one_move_per_second_not_ten_at_once(tmp_path: Path) -> None:
    cloud = evac_cloud(6)
    result, _, clock = run(cloud, evac_plan(6), tmp_path, rate=1.0, wait_ports=False)
    assert all(r.outcome is MoveOutcome.MOVED for r in result.results)
    elapsed = clock.monotonic() - 1000.0
    assert 5.0 - 1e-6 <= elapsed <= 5.5  # starts at 0, 1, ... 5 s (the old burst of 10: 0 s)
