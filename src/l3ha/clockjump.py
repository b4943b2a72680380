"""Clock-jump detection for the health judgement. Pure.

Two clocks can jump under the daemon: our own wall clock against our
monotonic clock (an NTP step, a suspended VM), and the server's clock, seen
only through the heartbeat timestamps it stamps. ``local_clock`` compares the
wall-minus-monotonic offset with the one seen last time. ``server_clock``
keeps bounds on the server-minus-monotonic offset, learned from heartbeats
that changed between two observations (written after the first and before
the second, truncated to the second), and reports a jump when most new
heartbeats fall outside the bounds, allowing for a clock rate error of
``CLOCK_RATE_ALLOWANCE``.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

#: Allowance for the server's clock rate against ours while tracking the
#: server-minus-monotonic offset: 1000 ppm, twice the most NTP will slew.
CLOCK_RATE_ALLOWANCE = 1e-3

Offset = tuple[float, float]


class ClockSource(StrEnum):
    """Whose clock jumped."""

    LOCAL = "local"  # our wall clock against our monotonic clock
    SERVER = "server"  # the server's heartbeat timestamps against our monotonic clock


@dataclass(frozen=True)
class ClockJump:
    """A clock jump of ``seconds`` (negative: backwards), detected at monotonic ``at``."""

    at: float
    seconds: float
    source: ClockSource


def local_clock(
    wall_offset: float | None, now: float, wall: float | None, tolerance: float
) -> ClockJump | None:
    """A jump when ``wall - now`` moved by more than ``tolerance`` since ``wall_offset``."""
    if wall is None or wall_offset is None:
        return None
    shift = (wall - now) - wall_offset
    if abs(shift) > tolerance:
        return ClockJump(now, shift, ClockSource.LOCAL)
    return None


def heartbeat_seconds(text: str) -> float | None:
    """A server timestamp (naive UTC ``YYYY-MM-DD HH:MM:SS[.ffffff]``) as epoch seconds."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def server_clock(
    offset: Offset | None,
    observed_at: float | None,
    new_heartbeats: Sequence[str],
    now: float,
    tolerance: float,
) -> tuple[Offset | None, ClockJump | None]:
    """The new bounds on server - monotonic, and a jump if most new heartbeats left them.

    ``new_heartbeats``: the heartbeat values that changed since the
    observation at ``observed_at``.
    """
    bounds = _bounds(observed_at, new_heartbeats, now)
    if not bounds:
        return offset, None
    fresh = _bracket(bounds)
    if offset is None or observed_at is None:
        return fresh, None
    slack = (now - observed_at) * CLOCK_RATE_ALLOWANCE
    low, high = offset[0] - slack, offset[1] + slack
    shift = statistics.median(_gap(b, low, high) for b in bounds)
    if abs(shift) > tolerance:
        return fresh, ClockJump(now, shift, ClockSource.SERVER)
    merged = (max(low, fresh[0]), min(high, fresh[1]))
    return (merged if merged[0] <= merged[1] else fresh), None


def _bounds(observed_at: float | None, heartbeats: Sequence[str], now: float) -> list[Offset]:
    """Each new heartbeat was written after ``observed_at`` and before ``now``."""
    if observed_at is None:
        return []
    bounds = []
    for text in heartbeats:
        written = heartbeat_seconds(text)
        if written is not None:
            bounds.append((written - now, written + 1.0 - observed_at))
    return bounds


def _bracket(bounds: list[Offset]) -> Offset:
    low, high = max(b[0] for b in bounds), min(b[1] for b in bounds)
    if low <= high:
        return low, high
    return min(b[0] for b in bounds), max(b[1] for b in bounds)


def _gap(bound: Offset, low: float, high: float) -> float:
    if bound[0] > high:
        return bound[0] - high
    if bound[1] < low:
        return bound[1] - low
    return 0.0
