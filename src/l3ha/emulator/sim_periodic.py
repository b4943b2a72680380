"""Neutron's periodic agent checks, the looping call both run on.

No I/O, but not pure: it changes the world on the simulation's clock.

Events on the simulation's clock; callers hold ``world.lock``. Neutron runs
``allow_automatic_l3agent_failover`` (``sim_failover``) and
``allow_automatic_dhcp_failover`` (``sim_dhcp_failover``) the same way
(neutron/db/agentschedulers_db.py), modelled once here:

- A FixedIntervalLoopingCall every ``max(agent_down_time // 2, 1)`` s after a random
  initial delay in ``[interval, 2 * interval]`` (here drawn from the seed and the check's
  name); a pass that outlasts the interval is followed by the next one at once.
- ``wait_down_agents``: when more than ``agent_down_time`` has passed since the previous
  pass started its work (a clock jump, or a long pass), it first sleeps
  ``2 * agent_down_time`` (the dead limit) to let agents check in.

A check is a ``PeriodicCheck`` with its pass (``_pass``), which may block the
loop by scheduling its own continuation and calls ``_finish`` at its end.
"""

from __future__ import annotations

import random
from datetime import datetime
from typing import ClassVar

from l3ha.emulator.sim_core import SimCore


class PeriodicCheck:
    """The looping call of one of Neutron's periodic checks (see the module docstring)."""

    loop_name: ClassVar[str]  # seeds the initial delay
    counter_names: ClassVar[tuple[str, ...]]  # what ``counters`` reports, in order

    def __init__(self, sim: SimCore) -> None:
        self.sim = sim
        self.cfg = sim.cfg
        self._canary: datetime | None = None
        self.passes = 0
        self.waits = 0
        self.pass_starts: list[float] = []

    def counters(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.counter_names}

    @property
    def interval(self) -> float:
        return float(max(int(self.cfg.agent_down_time // 2), 1))

    @property
    def dead_limit(self) -> float:
        return 2 * self.cfg.agent_down_time

    def start(self) -> None:
        rng = random.Random(f"{self.loop_name}:{self.cfg.seed}")
        interval = int(self.interval)
        delay = rng.randint(interval, 2 * interval)
        self.sim.schedule(self.sim.clock.monotonic() + delay, self._tick)

    def run_once(self, dead_limit: float | None = None) -> None:
        """One pass now, without the clock-jump wait, and no next pass scheduled after it.

        ``dead_limit`` (default ``2 * agent_down_time``) is how long a heartbeat must be
        stale for the pass to act on the agent; liveness of the candidates is unchanged.
        The pass may block (a move's RPC, its DB work): advance time to let it finish.
        """
        self._begin(self.sim.clock.monotonic(), again=False, dead_limit=dead_limit)

    def _tick(self) -> None:
        started = self.sim.clock.monotonic()
        wall = self.sim.clock.wall()
        if (
            self._canary is not None
            and (wall - self._canary).total_seconds() > self.cfg.agent_down_time
        ):
            self.waits += 1
            self.sim.schedule(started + self.dead_limit, self._begin, started)
        else:
            self._begin(started)

    def _begin(self, started: float, again: bool = True, dead_limit: float | None = None) -> None:
        self.passes += 1
        self.pass_starts.append(self.sim.clock.monotonic())
        wall = self.sim.clock.wall()
        self._canary = wall
        self._pass(started, wall, self.dead_limit if dead_limit is None else dead_limit, again)

    def _pass(self, started: float, wall: datetime, limit: float, again: bool) -> None:
        """One pass of the check, begun at wall time ``wall`` with the dead limit ``limit``;
        it calls ``_finish(started, again)`` when it is done."""
        raise NotImplementedError

    def _finish(self, started: float, again: bool) -> None:
        if not again:
            return
        elapsed = self.sim.clock.monotonic() - started
        self.sim.schedule(started + max(self.interval, elapsed), self._tick)
