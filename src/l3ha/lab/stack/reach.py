"""Each router's reachability from its VM, measured by ``ping``. I/O: spawns ping; parsing pure.

``Pingers`` runs one ``ping -D -O -i INTERVAL`` per router inside the router's
VM namespace (one small C process each: cheap beside the stack) and, when
stopped, turns each output into ``Reach``: the dark windows between answers.
A window is a gap between two answers (or an answer and the end) longer than
three intervals; its length is the gap minus one interval.
"""

from __future__ import annotations

import itertools
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from l3ha.lab.netns import terminate
from l3ha.lab.stack.spec import StackSpec, router_name, tenant_router_ip, vm_namespace

REPLY = re.compile(r"^\[(\d+\.\d+)\] \d+ bytes from ")


@dataclass(frozen=True)
class Reach:
    """One router's answers over a measurement: when it was dark, on the wall clock."""

    router: str
    answers: int
    windows: tuple[tuple[float, float], ...]

    @property
    def dark_seconds(self) -> float:
        return sum(end - start for start, end in self.windows)

    @property
    def longest(self) -> float:
        return max((end - start for start, end in self.windows), default=0.0)

    def back_after(self, since: float) -> float | None:
        """Seconds from ``since`` until the router answered for good (None: never dark since)."""
        later = [end for start, end in self.windows if end > since]
        return max(later) - since if later else None


def dark_windows(
    replies: list[float], started: float, ended: float, interval: float
) -> tuple[tuple[float, float], ...]:
    """Gaps longer than three intervals in ``replies`` (wall-clock times). Pure."""
    points = [started, *sorted(replies), ended]
    windows = []
    for before, after in itertools.pairwise(points):
        if after - before > 3 * interval:
            windows.append((before + interval, after))
    return tuple(windows)


def parse_replies(output: str) -> list[float]:
    return [float(m.group(1)) for m in map(REPLY.match, output.splitlines()) if m]


class Pingers:
    """One ping per router of ``spec``, writing to files under ``directory``."""

    def __init__(self, spec: StackSpec, directory: Path, interval: float = 0.2) -> None:
        self.spec, self.dir, self.interval = spec, directory, interval
        self.pids: dict[str, int] = {}
        self.started = self.ended = 0.0

    def start(self) -> Pingers:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.started = time.time()
        for index in self.spec.router_indexes:
            name = router_name(index)
            with open(self.dir / f"{name}.ping", "w") as out:
                argv = ["ip", "netns", "exec", vm_namespace(index), "ping", "-D", "-O", "-n"]
                argv += ["-i", str(self.interval), "-W", "1", tenant_router_ip(index)]
                process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
            self.pids[name] = process.pid
        return self

    def stop(self) -> dict[str, Reach]:
        """Stop every ping; each router's Reach over the whole run."""
        self.ended = time.time()
        terminate(self.pids.values(), grace=3)
        return {name: self.read(name) for name in self.pids}

    def read(self, name: str) -> Reach:
        replies = parse_replies((self.dir / f"{name}.ping").read_text())
        windows = dark_windows(replies, self.started, self.ended, self.interval)
        return Reach(name, len(replies), windows)
