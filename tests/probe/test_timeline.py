"""The annotated text timeline and the sampling grid arithmetic."""

from __future__ import annotations

import pytest
from tests.probe.fold import transitions_of

from l3ha.probe.events import Event
from l3ha.probe.scheduler import Grid
from l3ha.probe.timeline import offset, timeline_lines

from .test_analysis import stream


def test_offsets_are_signed_and_zero_padded() -> None:
    assert offset(0.6531) == "+00.653s"
    assert offset(21.872) == "+21.872s"
    assert offset(123.4) == "+123.400s"
    assert offset(-0.02) == "-00.020s"


def test_timeline_reads_like_an_operators_log() -> None:
    samples = stream("http keystone", "." + "x" * 212 + "..", interval=0.1, origin=10.0, skew=0)
    events = [
        Event(10.0 + 14.416, 0.0, "cloud", "agent net-2: dead"),
        Event(10.0 + 5.0, 0.0, "mark", "upgrade starts"),
    ]
    lines = timeline_lines(transitions_of(samples), events, origin=10.0)
    assert lines == [
        "+00.100s  http keystone: DOWN (timeout)",
        "+05.000s  mark: upgrade starts",
        "+14.416s  agent net-2: dead",
        "+21.300s  http keystone: UP after 21.2 s",
    ]


def test_timeline_closes_a_target_still_down() -> None:
    lines = timeline_lines(transitions_of(stream("tcp a", "..xx")), [], 100.0, until=100.4)
    assert lines[-1] == "+00.400s  tcp a: still DOWN at the end (0.2 s)"


def test_grid_staggers_targets_across_the_interval() -> None:
    grid = Grid(targets=4, interval=1.0, origin=50.0)
    assert [grid.due(j) for j in range(5)] == pytest.approx([50.0, 50.25, 50.5, 50.75, 51.0])
    assert grid.owner(5) == (1, 1)
    assert grid.first_slot_at_or_after(50.26) == 2
    assert grid.first_slot_at_or_after(50.25) == 1
    assert grid.first_slot_at_or_after(10.0) == 0
