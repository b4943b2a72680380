"""The adapter's one retry policy (attempts and a deadline per call) and its API rate cap.

Pure logic on a ManualClock (nothing sleeps for real), then the cap seen at
the emulator: one token bucket shared by every thread of one cloud.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from l3ha.clock import ManualClock
from l3ha.cloud.adapter import NeutronCloud, api_rate_bucket, connect, retry_policy
from l3ha.cloud.retry import RetryPolicy
from l3ha.emulator import Emulator
from l3ha.errors import ApiTimeoutError, BadInputError, ConflictError, L3haError, ServerError


def failing(
    times: int, error: L3haError, clock: ManualClock, cost: float = 0.0
) -> Callable[[], str]:
    """A call that fails ``times`` times with ``error`` (each costing ``cost`` s), then answers."""
    calls = {"n": 0}

    def call() -> str:
        calls["n"] += 1
        clock.advance(cost)
        if calls["n"] <= times:
            raise error
        return f"answer after {calls['n']} calls"

    return call


def test_retryable_errors_are_retried_with_doubling_pauses() -> None:
    clock = ManualClock()
    start = clock.monotonic()
    policy = RetryPolicy(attempts=5, first_pause=0.1, max_pause=1.0)
    assert policy.run(failing(3, ServerError("503"), clock), clock) == "answer after 4 calls"
    assert clock.monotonic() - start == pytest.approx(0.1 + 0.2 + 0.4)


def test_attempts_are_capped_and_the_error_says_it_was_retried() -> None:
    clock = ManualClock()
    with pytest.raises(ServerError, match=r"\(temporary; retried 4 times\)$"):
        RetryPolicy(attempts=5).run(failing(99, ServerError("503"), clock), clock)


def test_timeouts_get_fewer_attempts_because_each_cost_a_whole_timeout() -> None:
    clock = ManualClock()
    start = clock.monotonic()
    call = failing(99, ApiTimeoutError("timed out"), clock, cost=10.0)
    with pytest.raises(ApiTimeoutError, match=r"retried once\)$"):
        RetryPolicy(attempts=5, timeout_attempts=2, deadline=100).run(call, clock)
    assert clock.monotonic() - start == pytest.approx(20.1)  # two attempts, one pause


def test_the_deadline_stops_retrying_before_the_attempts_run_out() -> None:
    clock = ManualClock()
    start = clock.monotonic()
    call = failing(99, ServerError("503"), clock, cost=4.0)
    with pytest.raises(ServerError, match=r"retried once\)$"):
        RetryPolicy(attempts=5, deadline=6.0).run(call, clock)
    assert clock.monotonic() - start < 6.0 + 4.0  # no attempt starts after the deadline


def test_errors_that_retrying_cannot_fix_are_raised_at_once() -> None:
    clock = ManualClock()
    start = clock.monotonic()
    with pytest.raises(ConflictError) as info:
        RetryPolicy().run(failing(1, ConflictError("409"), clock), clock)
    assert "retried" not in str(info.value) and clock.monotonic() == start


def test_the_adapter_budget_follows_the_api_timeout() -> None:
    assert retry_policy(60.0).deadline == 150.0
    assert retry_policy(None).deadline == 30.0
    with pytest.raises(BadInputError, match="--api-rate must be positive"):
        api_rate_bucket(0.0, ManualClock())
    assert api_rate_bucket(None, ManualClock()) is None


@pytest.mark.timeout(60)
def test_api_rate_caps_the_calls_of_every_thread_together(emulator: Emulator) -> None:
    """20 calls/s with a burst of 20: 60 calls from 6 threads need about 2 s, not 0."""
    import time

    cloud = connect("l3ha-emulator", timeout=10, api_rate=20.0)
    assert isinstance(cloud, NeutronCloud)
    started = time.monotonic()
    threads = [
        threading.Thread(target=lambda: [cloud.list_agents() for _ in range(10)]) for _ in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    elapsed = time.monotonic() - started
    assert 1.8 <= elapsed <= 10.0  # (60 - 20 burst) / 20 per s = 2 s
