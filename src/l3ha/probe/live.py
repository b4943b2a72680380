"""The live terminal view of a running probe. I/O: writes ANSI screens to a terminal.

Used only when stdout is a terminal: every tick it redraws the state of each
target (up/down, loss, outages, current downtime) and the latest timeline lines.
"""

from __future__ import annotations

import shutil
import time
from typing import TextIO

from l3ha.probe.analysis import TargetTracker, Transition
from l3ha.probe.events import Event
from l3ha.probe.runner import Observer, Probe
from l3ha.probe.timeline import event_text, offset, transition_text

CLEAR = "\x1b[H\x1b[2J"
RED = "\x1b[31m"
GREEN = "\x1b[32m"
RESET = "\x1b[0m"
RECENT = 8


class LiveView(Observer):
    """Redraws the whole screen every tick."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._recent: list[tuple[float, str]] = []

    def on_transition(self, transition: Transition) -> None:
        self._remember(transition.mono, transition_text(transition))

    def on_event(self, event: Event) -> None:
        self._remember(event.mono, event_text(event))

    def _remember(self, mono: float, text: str) -> None:
        self._recent = [*self._recent, (mono, text)][-RECENT:]

    def on_tick(self, probe: Probe) -> None:
        self._stream.write(CLEAR + "\n".join(self.screen(probe)) + "\n")
        self._stream.flush()

    def screen(self, probe: Probe) -> list[str]:
        now = time.monotonic()
        rows = shutil.get_terminal_size((100, 30)).lines - RECENT - 4
        header = (
            f"l3ha probe {probe.config.name}  {offset(now - probe.origin)}  "
            f"interval {probe.config.interval:g} s  (Ctrl-C stops and writes the report)"
        )
        lines = [header, ""]
        trackers = sorted(probe.trackers, key=lambda t: t.current is None)
        for tracker in trackers[: max(rows, 1)]:
            lines.append(self._target_line(tracker, now))
        if len(trackers) > rows > 0:
            lines.append(f"... {len(trackers) - rows} more targets")
        lines.append("")
        lines += [f"{offset(mono - probe.origin)}  {text}" for mono, text in self._recent]
        return lines

    @staticmethod
    def _target_line(tracker: TargetTracker, now: float) -> str:
        loss = f"{100.0 * tracker.failed / tracker.samples:6.2f}" if tracker.samples else "   n/a"
        down = tracker.current
        state = (
            f"{RED}DOWN {now - down.start:6.1f}s{RESET}" if down else f"{GREEN}UP{RESET}         "
        )
        return f"{state}  {tracker.target:40.40}  loss {loss} %  outages {len(tracker.outages)}"
