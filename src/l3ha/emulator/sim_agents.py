"""Agent lifecycle in the simulation: faults, admin state and the management path.

No I/O, but not pure: it changes the world on the simulation's clock.

Runs on the simulation (its clock and event heap); callers hold ``world.lock``.

- killing (unless only its process, ``node=False``), reviving or partitioning an agent
  does it to every agent on its node (``World.node_agents``); a killed node neither
  heartbeats, processes nor forwards, and its stale copies go; a revived one gets a new
  ``started_at``, reports as soon as it reaches the bus and, if it was dead or its data
  plane broken, resyncs every router (dark until processed);
- stopping an agent's process (an upgrade) leaves its routers' namespaces forwarding;
  starting it reports and resyncs once it reaches the message bus;
- disabling an agent tears its routers down (bindings stay); enabling resyncs;
- the management path (neutron/agent/l3/agent.py): an agent cut off from the bus
  (broker outage, management partition) learns no new binding and keeps forwarding
  unbound routers as stale copies; on reconnection it reports at once and does a
  full resync: stale copies removed, unprocessed bindings queued.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from l3ha.emulator import sim_ports
from l3ha.emulator.records import DHCP_AGENT, AgentRec
from l3ha.emulator.sim_core import SimCore
from l3ha.emulator.sim_dhcp import DhcpSimulation
from l3ha.emulator.sim_schedule import RouterScheduler
from l3ha.emulator.sim_vrrp import VrrpModel


@dataclass(eq=False)
class AgentLifecycle:
    """What happens to the simulation's agents' processes, nodes and message-bus links."""

    sim: SimCore
    scheduler: RouterScheduler
    vrrp: VrrpModel
    dhcp: DhcpSimulation
    broker_until: float = field(default=0.0, init=False)
    _outages: int = field(default=0, init=False)

    # --- the management path ---------------------------------------------------------

    def _cut_off(self, agent: AgentRec, until: float) -> None:
        """The agent loses the bus until ``until`` (it reconnects then, if nothing else)."""
        if agent.running:
            agent.cut_off = True
        self.sim.schedule(until, self._reconnect_due, agent)

    def _reconnect_due(self, agent: AgentRec) -> None:
        if agent.cut_off and self.sim.can_report(agent):
            self.reconnect(agent)

    def reconnect(self, agent: AgentRec) -> None:
        """Back on the bus: report at once, then a full resync (neutron's fullsync)."""
        sim = self.sim
        agent.cut_off = False
        agent.heartbeat = sim.clock.wall()
        if agent.start_unreported:  # the start report (start_flag) sets started_at
            agent.started_at, agent.start_unreported = agent.heartbeat, False
        self.drop_stale(agent)
        self.scheduler.full_resync(agent)
        if agent.agent_type == DHCP_AGENT:
            self.dhcp.resync(agent)
        unprocessed = (r.id for r in agent.routers.values() if not r.bindings[agent.id].processed)
        agent.work.resync(unprocessed)
        sim.pump(agent)
        for router in agent.routers.values():
            self.vrrp.sync_reported(router)

    def drop_stale(self, agent: AgentRec) -> None:
        """Remove the copies of routers the agent runs but no longer hosts."""
        stale, agent.stale = agent.stale, {}
        for router_id in stale:
            router = self.sim.world.routers.get(router_id)
            if router is not None:
                router.stale.pop(agent.id, None)
                self.sim.refresh(router)

    def _requeue_all(self, agent: AgentRec) -> None:
        """Everything the agent ran is gone: its routers wait for a full resync."""
        agent.work.abandon()
        for router in agent.routers.values():
            replica = router.bindings[agent.id]
            replica.processed = False
            replica.vrrp = "backup"
            agent.work.sync_queue.append(router.id)

    # --- faults and admin state ---------------------------------------------------------

    def kill(self, agent: AgentRec, node: bool = True) -> None:
        """The node dies (``node``; else only this agent's process): no heartbeats, no
        processing, no forwarding, no stale copies."""
        for each in self.sim.world.node_agents(agent) if node else [agent]:
            self._kill_one(each)

    def _kill_one(self, agent: AgentRec) -> None:
        if agent.agent_type == DHCP_AGENT:
            self.dhcp.killed(agent)
        agent.running = False
        agent.cut_off = False
        agent.work.abandon()
        self.drop_stale(agent)
        self.sim.refresh_agent(agent)

    def revive(self, agent: AgentRec) -> None:
        """The node's agents (re)start: new started_at and a heartbeat at once. A dead node
        or broken data plane comes back and resyncs every router (dark until processed); a
        healthy one only restarts its process (routers keep forwarding)."""
        for each in self.sim.world.node_agents(agent):
            self._revive_one(each)

    def _revive_one(self, agent: AgentRec) -> None:
        healthy = agent.running and agent.dataplane_ok
        agent.running = True
        agent.stopped = False
        agent.dataplane_ok = True
        agent.started_at = self.sim.clock.wall()
        if not healthy:
            self._requeue_all(agent)
            self.drop_stale(agent)
            self.sim.refresh_agent(agent)
        if self.sim.can_report(agent):
            self.reconnect(agent)
        else:
            agent.cut_off = True  # it starts without the bus: it syncs once it reaches it

    def stop_agent(self, agent: AgentRec) -> None:
        """The agent process stops (an upgrade), the node does not: no heartbeats, no
        processing, no binding change reaches it; its routers' namespaces stay and forward
        (a router unbound meanwhile stays as a stale copy until the agent resyncs). A DHCP
        agent's dnsmasq processes go on serving its set-up networks the same way."""
        if not agent.running or agent.stopped:
            return
        if agent.agent_type == DHCP_AGENT:
            self.dhcp.stopped(agent)
        agent.stopped = True
        agent.cut_off = True  # it resyncs when it starts
        agent.work.abandon()

    def start_agent(self, agent: AgentRec) -> None:
        """The stopped agent process starts: it reports (a new started_at) and does a full
        resync at once if it reaches the message bus, else only once it does."""
        if not agent.running or not agent.stopped:
            return
        agent.stopped = False
        agent.start_unreported = True
        if self.sim.can_report(agent):
            self.reconnect(agent)

    def set_admin_state(self, agent: AgentRec, up: bool) -> None:
        """Disabled agents tear their routers down (bindings stay); enabling resyncs."""
        if agent.admin_state_up == up:
            return
        agent.admin_state_up = up
        if agent.agent_type == DHCP_AGENT:
            self.dhcp.admin_changed(agent)
            return
        self._requeue_all(agent)
        if not up:
            agent.work.queue.clear()
            for router in agent.routers.values():
                sim_ports.torn_down(router, agent)
        elif self.sim.can_report(agent):  # agent_updated: a full resync
            self.scheduler.full_resync(agent)
        self.sim.refresh_agent(agent)
        self.sim.pump(agent)

    def dataplane_fail(self, agent: AgentRec) -> None:
        agent.dataplane_ok = False
        self.sim.refresh_agent(agent)

    def mgmt_partition(self, agent: AgentRec, seconds: float) -> None:
        for each in self.sim.world.node_agents(agent):
            each.partition_until = max(each.partition_until, self.sim.clock.monotonic() + seconds)
            self._cut_off(each, each.partition_until)

    def broker_outage(self, seconds: float, spread: float = 0.0) -> list[str]:
        """Every agent loses the bus for ``seconds``; ``broker_reconnect_time`` after it is
        back, they come back one by one over ``spread`` seconds in an order drawn from the
        seed. Returns the hosts in order."""
        agents = list(self.sim.world.agents.values())
        random.Random(f"broker-outage:{self.sim.cfg.seed}:{self._outages}").shuffle(agents)
        self._outages += 1
        end = self.sim.clock.monotonic() + seconds + self.sim.cfg.broker_reconnect_time
        for n, agent in enumerate(agents):
            back = end + (spread * n / (len(agents) - 1) if len(agents) > 1 else 0.0)
            agent.broker_until = max(agent.broker_until, back)
            self._cut_off(agent, agent.broker_until)
        self.broker_until = max([self.broker_until, *(a.broker_until for a in agents)])
        return [a.host for a in agents]

    def slow_agent(self, agent: AgentRec, factor: float) -> None:
        agent.slow_factor = factor
