"""Neutron's ``allow_automatic_dhcp_failover`` periodic check, as neutron 29 runs it. Pure.

Events on the simulation's clock; callers hold ``world.lock``. What neutron does
(neutron/db/agentschedulers_db.py ``remove_networks_from_down_agents``,
neutron/objects/network.py ``get_down_bindings``) and how it is modelled:

- Its own looping call, every ``max(agent_down_time // 2, 1)`` s after a random initial
  delay in ``[interval, 2 * interval]`` (here drawn from the seed), with the same
  clock-jump wait as the L3 check (``wait_down_agents``: sleep the dead limit when more
  than ``agent_down_time`` passed since the previous pass).
- Down bindings: every binding of an agent whose heartbeat is older than the dead limit
  (``2 * agent_down_time``) — whatever its admin state — except the agents still
  *starting up*: ``started_at + dead limit + 2 s per network bound to it`` not yet past.
- The guard: no DHCP agent at all -> nothing; no DHCP agent alive or starting up ->
  "No DHCP agents available, skipping rescheduling", nothing moves. One live agent
  anywhere is enough for every dead binding to go.
- Each dead binding: ``remove_network_from_dhcp_agent(notify=False)`` (the port is
  re-labelled reserved; the agent, dead or not, is not told), then, with
  ``network_auto_schedule``, ``_schedule_network``: the WeightScheduler tops the network up
  to ``dhcp_agents_per_network`` with enabled agents that are alive or starting up, least
  ``load`` first — the networks count of each agent's *last state report*, so one pass
  piles networks onto the same agents until they report again. The new agents are told
  by a cast (nothing blocks); each binding costs the pass ``neutron_move_time`` of DB work.
"""

from __future__ import annotations

import random
from collections import deque
from datetime import datetime, timedelta

from l3ha.emulator.records import AgentRec
from l3ha.emulator.sim_core import SimCore
from l3ha.emulator.sim_dhcp import DhcpSimulation


class NeutronDhcpFailover:
    """The periodic DHCP check; counters say what it did."""

    def __init__(self, sim: SimCore, dhcp: DhcpSimulation) -> None:
        self.sim = sim
        self.dhcp = dhcp
        self.cfg = sim.cfg
        self._canary: datetime | None = None
        self.passes = 0
        self.removed = 0
        self.moves = 0
        self.skipped = 0
        self.waits = 0

    @property
    def interval(self) -> float:
        return float(max(int(self.cfg.agent_down_time // 2), 1))

    @property
    def dead_limit(self) -> float:
        return 2 * self.cfg.agent_down_time

    def start(self) -> None:
        rng = random.Random(f"neutron-dhcp-failover:{self.cfg.seed}")
        interval = int(self.interval)
        self.sim.schedule(
            self.sim.clock.monotonic() + rng.randint(interval, 2 * interval), self._tick
        )

    def counters(self) -> dict[str, int]:
        return {
            "passes": self.passes,
            "removed": self.removed,
            "moves": self.moves,
            "skipped": self.skipped,
            "waits": self.waits,
        }

    # --- the looping call ---------------------------------------------------------

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

    def run_once(self, dead_limit: float | None = None) -> None:
        """One pass now, without the clock-jump wait and with no next pass after it;
        ``dead_limit`` replaces ``2 * agent_down_time`` (liveness is unchanged)."""
        self._begin(self.sim.clock.monotonic(), again=False, dead_limit=dead_limit)

    def _begin(self, started: float, again: bool = True, dead_limit: float | None = None) -> None:
        self.passes += 1
        wall = self.sim.clock.wall()
        self._canary = wall
        limit = self.dead_limit if dead_limit is None else dead_limit
        agents = self.dhcp.agents()
        dead = [
            (net_id, agent.id)
            for agent in agents
            if agent.heartbeat < wall - timedelta(seconds=limit)
            and not self._starting_up(agent, limit, wall)
            for net_id in self.sim.world.dhcp.networks_of(agent)
        ]
        if not agents:
            self._finish(started, again)
            return
        if not any(self._eligible(a, limit, wall) for a in agents):
            self.skipped += 1
            self._finish(started, again)
            return
        self._walk(started, deque(sorted(dead)), limit, again)

    def _starting_up(self, agent: AgentRec, limit: float, now: datetime) -> bool:
        return self.dhcp.starting_up(agent, limit, now)

    def _eligible(self, agent: AgentRec, limit: float, now: datetime) -> bool:
        return self.dhcp.eligible(agent, limit, now)

    def _walk(
        self, started: float, todo: deque[tuple[str, str]], limit: float, again: bool
    ) -> None:
        while todo:
            net_id, agent_id = todo.popleft()
            network = self.sim.world.networks.get(net_id)
            agent = self.sim.world.agents.get(agent_id)
            if network is None or agent is None:
                continue
            if self.dhcp.remove(network, agent, notify=False):
                self.removed += 1
            wall = self.sim.clock.wall()
            eligible = {a.id for a in self.dhcp.agents() if self._eligible(a, limit, wall)}
            self.moves += len(self.dhcp.schedule(network, eligible))
            now = self.sim.clock.monotonic()  # the binding's DB work blocks the pass
            self.sim.schedule(
                now + self.cfg.neutron_move_time, self._walk, started, todo, limit, again
            )
            return
        self._finish(started, again)

    def _finish(self, started: float, again: bool) -> None:
        if not again:
            return
        elapsed = self.sim.clock.monotonic() - started
        self.sim.schedule(started + max(self.interval, elapsed), self._tick)
