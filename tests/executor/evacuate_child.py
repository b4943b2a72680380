"""A child process that evacuates one emulator agent with the executor (for the crash test).

I/O: reads the cloud named by OS_CLOUD through OS_CLIENT_CONFIG_FILE, writes the
journal in the state dir given as argv[2]. argv[1] is the source host;
argv[2] the state dir; argv[3] seconds to pause before each bind call (so the parent can
kill it while routers are unbound and not yet bound). The parent kills it with SIGKILL
in the middle and recovers.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from l3ha.clock import SystemClock
from l3ha.cloud.adapter import connect
from l3ha.executor import Executor, ExecutorOptions
from l3ha.journal import Journal
from l3ha.model import Move, MoveKind, Plan


class SlowBinds:
    """The adapter, pausing before every bind (a test double at our own edge)."""

    def __init__(self, cloud: Any, pause: float) -> None:
        self._cloud = cloud
        self._pause = pause

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cloud, name)

    def bind(self, router_id: str, agent_id: str) -> Any:
        time.sleep(self._pause)
        return self._cloud.bind(router_id, agent_id)


def main() -> None:
    host, state_dir, pause = sys.argv[1], Path(sys.argv[2]), float(sys.argv[3])
    cloud = SlowBinds(connect(), pause)
    snapshot = cloud.read_snapshot()
    source = snapshot.find_agent(host)
    targets = sorted(a.id for a in snapshot.agents if a.id != source.id)
    bindings = sorted(snapshot.bindings_of_agent(source.id), key=lambda b: b.router_id)
    moves = tuple(
        Move(b.router_id, MoveKind.MOVE, targets[i % len(targets)], source.id, "crash test")
        for i, b in enumerate(bindings)
    )
    options = ExecutorOptions(concurrency=4, port_poll_interval=0.05, port_timeout=30)
    Executor(cloud, Journal(state_dir), SystemClock(), options).run(Plan("evacuate", moves))


if __name__ == "__main__":
    main()
