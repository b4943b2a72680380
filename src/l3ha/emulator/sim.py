"""The simulated agents and data plane: heartbeats, router processing, VRRP, faults. Pure.

Time comes from an injected clock: events sit on a heap keyed by monotonic time
and ``run_due`` runs those whose time has come (the server's thread calls it
every few tens of milliseconds; a ManualClock test calls ``advance``).
Callers hold ``world.lock``. Data-plane changes are reported to
``on_reachability`` (the TCP listeners).

Model:
- an agent heartbeats every ``report_interval`` while its process runs and its
  management path (message bus, host link) works; the heartbeat carries the
  server's wall time;
- the management path (neutron/agent/l3/agent.py): an agent learns of a new
  binding only by RPC, so while it is cut off (broker outage, management
  partition) it neither picks up new bindings nor drops unbound routers — it
  keeps forwarding them as stale copies; on reconnection it reports at once and
  does a full resync: stale copies are removed, unprocessed bindings queued;
- an agent processes routers ``agent_concurrency`` at a time, RPC-added ones
  ahead of full-resync work (neutron's priority queue), each taking
  ``router_base_time + router_port_time * ports`` (times its slow factor);
- a router forwards while an agent that runs it forwards (for HA: the VRRP
  master); an agent forwards while it runs, its data plane works, it is
  administratively up and its busy weight is within ``agent_capacity``; a legacy
  router running on two forwarding agents (a stale copy and its new home) has a
  duplicate gateway address and counts as unreachable until the stale copy goes;
- HA: when no live replica is master, one is elected after ``ha_takeover_time``;
  an agent reports a new primary ``ha_vrrp_advert_int`` after the transition
  through a notifier that sends one batch per interval (neutron/agent/l3/ha.py),
  and only while it can report;
- Neutron's automatic failover lives in ``sim_failover``, its scheduling on agent resync
  and router update (``router_auto_schedule``) in ``sim_schedule``, when ports change
  host and status in ``sim_ports``, VRRP elections and HA state reports in ``sim_vrrp``;
  DHCP agents in ``sim_dhcp`` and ``sim_dhcp_failover``;
- killing, reviving or partitioning an agent does it to every agent on its node.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Callable
from datetime import datetime
from typing import Any

from l3ha.clock import Clock
from l3ha.emulator import sim_ports
from l3ha.emulator.config import EmulatorConfig
from l3ha.emulator.sim_dhcp import DhcpSimulation
from l3ha.emulator.sim_dhcp_failover import NeutronDhcpFailover
from l3ha.emulator.sim_failover import NeutronFailover
from l3ha.emulator.sim_schedule import RouterScheduler
from l3ha.emulator.sim_vrrp import VrrpModel
from l3ha.emulator.world import DHCP_AGENT, AgentRec, NetworkRec, Replica, RouterRec, World

Event = tuple[float, int, Callable[..., None], tuple[Any, ...]]


class Simulation:
    """Drives the world's simulated behaviour on the clock."""

    def __init__(self, world: World, cfg: EmulatorConfig, clock: Clock,
                 ha_net: NetworkRec) -> None:
        self.world = world
        self.cfg = cfg
        self.clock = clock
        self.ha_net = ha_net
        self.broker_until = 0.0
        self.on_reachability: Callable[[RouterRec], None] = lambda router: None
        self._events: list[Event] = []
        self._seq = itertools.count()
        self._outages = 0
        self.failover = NeutronFailover(self)
        self.scheduler = RouterScheduler(self)
        self.dhcp = DhcpSimulation(self)
        self.dhcp_failover = NeutronDhcpFailover(self)
        self.vrrp = VrrpModel(self)

    # --- event loop -----------------------------------------------------------

    def schedule(self, at: float, func: Callable[..., None], *args: Any) -> None:
        heapq.heappush(self._events, (at, next(self._seq), func, args))

    def start(self) -> None:
        """Schedule heartbeats (spread over one interval) and the failover check."""
        now = self.clock.monotonic()
        agents = list(self.world.agents.values())
        for agent in agents:
            offset = self.cfg.report_interval * (agent.index + 1) / (len(agents) + 1)
            self.schedule(now + offset, self._heartbeat, agent)
        if self.cfg.neutron_auto_failover:
            self.failover.start()
            if self.dhcp.agents():
                self.dhcp_failover.start()
        for router in self.world.routers.values():
            router.since = self.clock.wall()
            router.reachable = router.admin_state_up and self.router_forwards(router)
            router.down_since = None if router.reachable else now
            if router.reachable:
                self.on_reachability(router)

    def run_due(self) -> int:
        """Run every event due by now; return how many ran."""
        now = self.clock.monotonic()
        ran = 0
        while self._events and self._events[0][0] <= now:
            _, _, func, args = heapq.heappop(self._events)
            func(*args)
            ran += 1
        return ran

    def advance(self, seconds: float, advance_clock: Callable[[float], None]) -> None:
        """Move a manual clock forward event by event, running each at its time."""
        target = self.clock.monotonic() + seconds
        self.run_due()
        while self._events and self._events[0][0] <= target:
            step = self._events[0][0] - self.clock.monotonic()
            if step > 0:
                advance_clock(step)
            self.run_due()
        rest = target - self.clock.monotonic()
        if rest > 0:
            advance_clock(rest)
        self.run_due()

    # --- predicates -------------------------------------------------------------

    @property
    def failover_moves(self) -> int:
        return self.failover.moves

    def can_report(self, agent: AgentRec) -> bool:
        """The agent's process runs and reaches the message bus (both ways)."""
        now = self.clock.monotonic()
        return (agent.running and not agent.stopped and now >= agent.partition_until
                and now >= agent.broker_until)

    def forwards(self, agent: AgentRec) -> bool:
        return (agent.running and agent.dataplane_ok and agent.admin_state_up
                and agent.weight <= self.cfg.agent_capacity)

    def vrrp_alive(self, agent: AgentRec) -> bool:
        return agent.running and agent.dataplane_ok and agent.admin_state_up

    def is_alive(self, agent: AgentRec, now: datetime | None = None) -> bool:
        """Neutron's view: heartbeat not older than ``agent_down_time``."""
        now = now or self.clock.wall()
        return (now - agent.heartbeat).total_seconds() <= self.cfg.agent_down_time

    # --- heartbeats ---------------------------------------------------------------

    def _heartbeat(self, agent: AgentRec) -> None:
        if self.can_report(agent):
            if agent.cut_off:
                self._reconnect(agent)
            agent.heartbeat = self.clock.wall()
            if agent.agent_type == DHCP_AGENT:
                self.dhcp.reported(agent)
            for router in agent.routers.values():
                self.vrrp.sync_reported(router)
        self.schedule(self.clock.monotonic() + self.cfg.report_interval, self._heartbeat, agent)

    # --- the management path ---------------------------------------------------------

    def _cut_off(self, agent: AgentRec, until: float) -> None:
        """The agent loses the bus until ``until`` (it reconnects then, if nothing else)."""
        if agent.running:
            agent.cut_off = True
        self.schedule(until, self._reconnect_due, agent)

    def _reconnect_due(self, agent: AgentRec) -> None:
        if agent.cut_off and self.can_report(agent):
            self._reconnect(agent)

    def _reconnect(self, agent: AgentRec) -> None:
        """Back on the bus: report at once, then a full resync (neutron's fullsync)."""
        agent.cut_off = False
        agent.heartbeat = self.clock.wall()
        if agent.start_unreported:  # the start report (start_flag) sets started_at
            agent.started_at, agent.start_unreported = agent.heartbeat, False
        self.drop_stale(agent)
        self.scheduler.full_resync(agent)
        if agent.agent_type == DHCP_AGENT:
            self.dhcp.resync(agent)
        waiting = {*agent.queue, *agent.sync_queue, *agent.inflight}
        for router in agent.routers.values():
            if not router.bindings[agent.id].processed and router.id not in waiting:
                agent.sync_queue.append(router.id)
        self._pump(agent)
        for router in agent.routers.values():
            self.vrrp.sync_reported(router)

    def drop_stale(self, agent: AgentRec) -> None:
        """Remove the copies of routers the agent runs but no longer hosts."""
        stale, agent.stale = agent.stale, {}
        for router_id in stale:
            router = self.world.routers.get(router_id)
            if router is not None:
                router.stale.pop(agent.id, None)
                self.refresh(router)

    # --- router processing -----------------------------------------------------------

    def bind(self, router: RouterRec, agent: AgentRec, notify: bool = True) -> None:
        """Bind and tell the agent (router_added_to_agent): lost while it is cut off.
        ``notify=False``: the agent learns it in its resync (auto-scheduling)."""
        overloaded = agent.weight > self.cfg.agent_capacity
        replica = self.world.bind(router, agent, self.ha_net, self.clock.wall())
        copy = agent.stale.pop(router.id, None)
        router.stale.pop(agent.id, None)
        if copy is not None:  # it never removed the router: it goes on running it
            replica.processed, replica.vrrp = copy.processed, copy.vrrp
            replica.synced = copy.synced
        elif self.can_report(agent):
            (agent.queue if notify else agent.sync_queue).append(router.id)
            self._pump(agent)
        self._after_weight_change(agent, overloaded)
        self.refresh(router)

    def unbind(self, router: RouterRec, agent: AgentRec) -> bool:
        """Unbind and tell the agent; a cut-off agent keeps running its copy."""
        overloaded = agent.weight > self.cfg.agent_capacity
        replica = self.world.unbind(router, agent)
        if replica is None:
            return False
        agent.inflight.pop(router.id, None)
        if replica.processed and agent.running and not self.can_report(agent):
            agent.stale[router.id] = replica
            router.stale[agent.id] = replica
        elif self.can_report(agent):
            sim_ports.torn_down(router, agent)
        self._after_weight_change(agent, overloaded)
        self.refresh(router)
        self._pump(agent)
        return True

    def _pump(self, agent: AgentRec) -> None:
        """Start processing queued routers up to the agent's concurrency."""
        if not (agent.running and not agent.stopped and agent.admin_state_up):
            return
        now = self.clock.monotonic()
        while ((agent.queue or agent.sync_queue)
               and len(agent.inflight) < self.cfg.agent_concurrency):
            queue = agent.queue or agent.sync_queue
            router = self.world.routers.get(queue.popleft())
            if router is None or router.id in agent.inflight:
                continue
            replica = router.bindings.get(agent.id)
            if replica is None or replica.processed:
                continue
            ports = len(router.ports) + (1 if router.ha else 0)
            duration = (self.cfg.router_base_time + self.cfg.router_port_time * ports)
            done = now + duration * agent.slow_factor
            agent.inflight[router.id] = done
            sim_ports.fetched(router, replica)
            self.schedule(done, self._processed, agent, router.id, agent.generation, done)

    def _processed(self, agent: AgentRec, router_id: str, generation: int, done: float) -> None:
        if generation != agent.generation or agent.inflight.get(router_id) != done:
            return  # the work was abandoned (unbound, killed, disabled) or restarted since
        del agent.inflight[router_id]
        router = self.world.routers.get(router_id)
        replica = router.bindings.get(agent.id) if router else None
        if router is not None and replica is not None:
            replica.processed = True
            sim_ports.wired(router, replica)
            self.refresh(router)
        self._pump(agent)

    def _requeue_all(self, agent: AgentRec) -> None:
        """Everything the agent ran is gone: its routers wait for a full resync."""
        agent.generation += 1
        agent.inflight.clear()
        agent.queue.clear()
        agent.sync_queue.clear()
        for router in agent.routers.values():
            replica = router.bindings[agent.id]
            replica.processed = False
            replica.vrrp = "backup"
            agent.sync_queue.append(router.id)

    # --- HA and data plane ----------------------------------------------------------

    def refresh(self, router: RouterRec) -> None:
        """Re-derive VRRP, reported HA state, port host and forwarding of one router."""
        if router.ha:
            self.vrrp.check(router)
        self.vrrp.sync_reported(router)
        self._update_reachability(router)

    def copies(self, router: RouterRec) -> list[Replica]:
        """Every copy of the router an agent runs or is setting up: bindings, then stale."""
        return [*router.bindings.values(), *router.stale.values()]

    # --- data plane -----------------------------------------------------------------------

    def forwarding_copies(self, router: RouterRec) -> list[Replica]:
        """Copies that put the router's gateway address on a forwarding node."""
        return [r for r in self.copies(router)
                if r.processed and self.forwards(r.agent)
                and (not router.ha or r.vrrp == "master")]

    def router_forwards(self, router: RouterRec) -> bool:
        """One forwarding copy (HA: at least one master); two legacy copies clash."""
        forwarding = len(self.forwarding_copies(router))
        return forwarding >= 1 if router.ha else forwarding == 1

    def _update_reachability(self, router: RouterRec) -> None:
        reachable = router.admin_state_up and self.router_forwards(router)
        if reachable == router.reachable:
            return
        now = self.clock.monotonic()
        if reachable and router.down_since is not None:
            router.downtime += now - router.down_since
            router.down_since = None
        elif not reachable:
            router.down_since = now
        router.reachable = reachable
        router.since = self.clock.wall()
        self.on_reachability(router)

    def downtime(self, router: RouterRec) -> float:
        ongoing = 0.0
        if router.down_since is not None:
            ongoing = self.clock.monotonic() - router.down_since
        return router.downtime + ongoing

    def _after_weight_change(self, agent: AgentRec, was_overloaded: bool) -> None:
        """Re-check forwarding of the agent's routers when it is or was overloaded."""
        if was_overloaded or agent.weight > self.cfg.agent_capacity:
            self.refresh_agent(agent)

    def refresh_agent(self, agent: AgentRec) -> None:
        for router in list(agent.routers.values()):
            self.refresh(router)

    # --- faults and admin state ---------------------------------------------------------

    def kill(self, agent: AgentRec, node: bool = True) -> None:
        """The node dies (``node``; else only this agent's process): no heartbeats, no
        processing, no forwarding, no stale copies."""
        for each in self.world.node_agents(agent) if node else [agent]:
            self._kill_one(each)

    def _kill_one(self, agent: AgentRec) -> None:
        if agent.agent_type == DHCP_AGENT:
            self.dhcp.killed(agent)
        agent.running = False
        agent.cut_off = False
        agent.generation += 1
        agent.inflight.clear()
        agent.queue.clear()
        agent.sync_queue.clear()
        self.drop_stale(agent)
        self.refresh_agent(agent)

    def revive(self, agent: AgentRec) -> None:
        """The node's agents (re)start: new started_at and a heartbeat at once. A dead node
        or broken data plane comes back and resyncs every router (dark until processed); a
        healthy one only restarts its process (routers keep forwarding)."""
        for each in self.world.node_agents(agent):
            self._revive_one(each)

    def _revive_one(self, agent: AgentRec) -> None:
        healthy = agent.running and agent.dataplane_ok
        agent.running = True
        agent.stopped = False
        agent.dataplane_ok = True
        agent.started_at = self.clock.wall()
        if not healthy:
            self._requeue_all(agent)
            self.drop_stale(agent)
            self.refresh_agent(agent)
        if self.can_report(agent):
            self._reconnect(agent)
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
        agent.generation += 1
        agent.inflight.clear()
        agent.queue.clear()
        agent.sync_queue.clear()

    def start_agent(self, agent: AgentRec) -> None:
        """The stopped agent process starts: it reports (a new started_at) and does a full
        resync at once if it reaches the message bus, else only once it does."""
        if not agent.running or not agent.stopped:
            return
        agent.stopped = False
        agent.start_unreported = True
        if self.can_report(agent):
            self._reconnect(agent)

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
            agent.queue.clear()
            for router in agent.routers.values():
                sim_ports.torn_down(router, agent)
        elif self.can_report(agent):  # agent_updated: a full resync
            self.scheduler.full_resync(agent)
        self.refresh_agent(agent)
        self._pump(agent)

    def dataplane_fail(self, agent: AgentRec) -> None:
        agent.dataplane_ok = False
        self.refresh_agent(agent)

    def mgmt_partition(self, agent: AgentRec, seconds: float) -> None:
        for each in self.world.node_agents(agent):
            each.partition_until = max(each.partition_until, self.clock.monotonic() + seconds)
            self._cut_off(each, each.partition_until)

    def broker_outage(self, seconds: float, spread: float = 0.0) -> list[str]:
        """Every agent loses the bus for ``seconds``; they come back one by one over
        ``spread`` seconds in an order drawn from the seed. Returns the hosts in order."""
        agents = list(self.world.agents.values())
        random.Random(f"broker-outage:{self.cfg.seed}:{self._outages}").shuffle(agents)
        self._outages += 1
        end = self.clock.monotonic() + seconds
        for n, agent in enumerate(agents):
            back = end + (spread * n / (len(agents) - 1) if len(agents) > 1 else 0.0)
            agent.broker_until = max(agent.broker_until, back)
            self._cut_off(agent, agent.broker_until)
        self.broker_until = max([self.broker_until, *(a.broker_until for a in agents)])
        return [a.host for a in agents]

    def slow_agent(self, agent: AgentRec, factor: float) -> None:
        agent.slow_factor = factor

    def retag(self, router: RouterRec, tags: list[str]) -> None:
        before = {r.agent.id: r.agent.weight > self.cfg.agent_capacity
                  for r in router.bindings.values()}
        self.world.set_tags(router, tags, self.clock.wall())
        for replica in list(router.bindings.values()):
            self._after_weight_change(replica.agent, before[replica.agent.id])
