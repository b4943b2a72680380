"""Neutron's ``allow_automatic_dhcp_failover`` periodic check, as neutron 29 runs it.

No I/O, but not pure: it changes the world on the simulation's clock.

Events on the simulation's clock; callers hold ``world.lock``. What neutron does
(neutron/db/agentschedulers_db.py ``remove_networks_from_down_agents``,
neutron/objects/network.py ``get_down_bindings``) and how it is modelled:

- Its own looping call, with the same interval and clock-jump wait as the L3 check
  (``sim_periodic.PeriodicCheck``).
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

from collections import deque
from datetime import datetime, timedelta

from l3ha.emulator.sim_core import SimCore
from l3ha.emulator.sim_dhcp import DhcpSimulation
from l3ha.emulator.sim_periodic import PeriodicCheck


class NeutronDhcpFailover(PeriodicCheck):
    """The periodic DHCP check; counters say what it did."""

    loop_name = "neutron-dhcp-failover"
    counter_names = ("passes", "removed", "moves", "skipped", "waits")

    def __init__(self, sim: SimCore, dhcp: DhcpSimulation) -> None:
        super().__init__(sim)
        self.dhcp = dhcp
        self.removed = 0
        self.moves = 0
        self.skipped = 0

    def _pass(self, started: float, wall: datetime, limit: float, again: bool) -> None:
        agents = self.dhcp.agents()
        dead = [
            (net_id, agent.id)
            for agent in agents
            if agent.heartbeat < wall - timedelta(seconds=limit)
            and not self.dhcp.starting_up(agent, limit, wall)
            for net_id in self.sim.world.dhcp.networks_of(agent)
        ]
        if not agents:
            self._finish(started, again)
            return
        if not any(self.dhcp.eligible(a, limit, wall) for a in agents):
            self.skipped += 1
            self._finish(started, again)
            return
        self._walk(started, deque(sorted(dead)), limit, again)

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
            eligible = {a.id for a in self.dhcp.agents() if self.dhcp.eligible(a, limit, wall)}
            self.moves += len(self.dhcp.schedule(network, eligible))
            now = self.sim.clock.monotonic()  # the binding's DB work blocks the pass
            self.sim.schedule(
                now + self.cfg.neutron_move_time, self._walk, started, todo, limit, again
            )
            return
        self._finish(started, again)
