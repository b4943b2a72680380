"""The annotated text timeline of a probe run. Pure.

Lines are offsets from the probe's start, then what happened::

    +00.653s  http keystone: DOWN (connection refused)
    +14.416s  agent net-2: dead
    +21.872s  http keystone: UP after 21.2 s

Target changes come from ``Transition``s, the rest from ``Event``s; a target
still down when the probe stopped gets a closing line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from l3ha.probe.analysis import Change, Transition

if TYPE_CHECKING:  # the record type only; its module also holds the pollers (I/O)
    from l3ha.probe.events import Event


def offset(seconds: float) -> str:
    """``+00.653s``; negative offsets (events before the first sample) keep their sign."""
    sign = "-" if seconds < 0 else "+"
    return f"{sign}{abs(seconds):06.3f}s"


def transition_text(transition: Transition) -> str:
    if transition.change is Change.DOWN:
        reason = f" ({transition.reason})" if transition.reason else ""
        return f"{transition.target}: DOWN{reason}"
    return f"{transition.target}: UP after {transition.downtime:.1f} s"


def event_text(event: Event) -> str:
    if event.source == "cloud":
        return event.text
    return f"{event.source}: {event.text}"


def still_down(transitions: Iterable[Transition]) -> dict[str, float]:
    """Targets whose last change was DOWN, with the start of that outage."""
    state: dict[str, float | None] = {}
    for change in transitions:
        state[change.target] = change.mono if change.change is Change.DOWN else None
    return {target: start for target, start in state.items() if start is not None}


def timeline_lines(
    transitions: Sequence[Transition],
    events: Sequence[Event],
    origin: float,
    until: float | None = None,
) -> list[str]:
    """Every change and event in time order (changes first on ties)."""
    entries: list[tuple[float, int, str]] = [(t.mono, 0, transition_text(t)) for t in transitions]
    entries += [(e.mono, 1, event_text(e)) for e in events]
    if until is not None:
        for target, start in still_down(transitions).items():
            entries.append((until, 2, f"{target}: still DOWN at the end ({until - start:.1f} s)"))
    entries.sort(key=lambda entry: (entry[0], entry[1]))
    return [f"{offset(mono - origin)}  {text}" for mono, _, text in entries]
