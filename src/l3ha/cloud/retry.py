"""The one retry policy of API calls: attempts and a deadline per call.

I/O: sleeps between tries (on the injected clock, so a ``ManualClock`` never waits) and
logs each retry at debug level.

``RetryPolicy.run(call)`` calls again, after a growing pause, while ``call``
fails with a retryable ``l3ha.errors`` error, within a total budget: at most
``attempts`` tries (``timeout_attempts`` when the error was a timeout, each of
which already cost a whole api timeout) and no new try once ``deadline``
seconds have passed since the first. The error that remains says it was
temporary and how often it was retried. Only the cloud adapter uses it; the
executor never retries what the adapter already retried.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from l3ha.clock import Clock
from l3ha.errors import ApiTimeoutError, L3haError

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and for how long one idempotent API call is tried (see the module docstring)."""

    attempts: int = 5
    timeout_attempts: int = 2
    deadline: float = 30.0
    first_pause: float = 0.1
    max_pause: float = 1.0

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.timeout_attempts < 1:
            raise ValueError("a call needs at least one attempt")
        if self.deadline < 0 or self.first_pause < 0 or self.max_pause < self.first_pause:
            raise ValueError("the retry deadline and pauses must not be negative")

    def pause(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (1-based): doubling, capped."""
        return float(min(self.max_pause, self.first_pause * 2 ** (retry - 1)))

    def run(self, call: Callable[[], T], clock: Clock) -> T:
        """``call()``, retried within the budget; see the module docstring."""
        started = clock.monotonic()
        tries = 0
        while True:
            tries += 1
            try:
                return call()
            except L3haError as err:
                if not err.retryable:
                    raise
                limit = self.timeout_attempts if isinstance(err, ApiTimeoutError) else self.attempts
                pause = self.pause(tries)
                out_of_time = clock.monotonic() + pause - started > self.deadline
                if tries >= limit or out_of_time:
                    if tries == 1:
                        raise
                    raise as_retried(err, tries - 1) from err
                log.debug("retrying after a temporary error: %s", err)
            clock.sleep(pause)


def as_retried(err: L3haError, retries: int) -> L3haError:
    """``err``'s class with a message saying the error was temporary and retried."""
    times = "once" if retries == 1 else f"{retries} times"
    return type(err)(f"{err.message} (temporary; retried {times})")
