"""The executor's budgets: token bucket and per-target in-flight slots, on a ManualClock."""

from __future__ import annotations

import pytest

from l3ha.clock import ManualClock
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
