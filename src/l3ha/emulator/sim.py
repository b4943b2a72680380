"""The simulated agents and data plane: event loop, heartbeats, router processing, forwarding.

No I/O, but not pure: it runs on the injected clock and changes the world.

Time comes from an injected clock: events sit on a heap keyed by monotonic time
and ``run_due`` runs those whose time has come (the server's thread calls it
every few tens of milliseconds; a ManualClock test calls ``advance``).
Callers hold ``world.lock``. Data-plane changes are reported to
``on_reachability`` (the TCP listeners).

Model:
- an agent heartbeats every ``report_interval`` while its process runs and its
  management path (message bus, host link) works; the heartbeat carries the
  server's wall time;
- an agent learns of a new binding only by RPC, so while it is cut off from the
  bus (broker outage, management partition) it neither picks up new bindings nor
  drops unbound routers — it keeps forwarding them as stale copies;
- an agent processes routers ``agent_concurrency`` at a time, RPC-added ones
  ahead of full-resync work (neutron's priority queue), each taking
  ``router_base_time + router_port_time * ports`` (times its slow factor); a legacy
  router's ports turn ACTIVE ``port_active_delay`` after it forwards;
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
  DHCP agents in ``sim_dhcp`` and ``sim_dhcp_failover``; agent faults (kill, revive,
  stop, start, data plane, slowness), admin state and the management path (losing the
  bus, reconnecting with a full resync) in ``sim_agents``.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from l3ha.emulator import sim_ports
from l3ha.emulator.config import EmulatorConfig
from l3ha.emulator.records import DHCP_AGENT, AgentRec, NetworkRec, Replica, RouterRec
from l3ha.emulator.sim_agents import AgentLifecycle
from l3ha.emulator.sim_dhcp import DhcpSimulation
from l3ha.emulator.sim_dhcp_failover import NeutronDhcpFailover
from l3ha.emulator.sim_failover import NeutronFailover
from l3ha.emulator.sim_schedule import RouterScheduler
from l3ha.emulator.sim_vrrp import VrrpModel
from l3ha.emulator.world import World

if TYPE_CHECKING:  # the protocol only: time comes from the clock a caller injects
    from l3ha.clock import Clock

Event = tuple[float, int, Callable[..., None], tuple[Any, ...]]


class Simulation:
    """Drives the world's simulated behaviour on the clock."""

    def __init__(self, world: World, cfg: EmulatorConfig, clock: Clock,
                 ha_net: NetworkRec) -> None:
        self.world = world
        self.cfg = cfg
        self.clock = clock
        self.ha_net = ha_net
        self.on_reachability: Callable[[RouterRec], None] = lambda router: None
        # ML2/OVN mode: whether a router's gateway forwards is the OVN model's (sim_ovn).
        self.gateway_forwards: Callable[[RouterRec], bool] | None = None
        self._events: list[Event] = []
        self._seq = itertools.count()
        self.failover = NeutronFailover(self)
        self.scheduler = RouterScheduler(self)
        self.dhcp = DhcpSimulation(self)
        self.dhcp_failover = NeutronDhcpFailover(self, self.dhcp)
        self.vrrp = VrrpModel(self)
        self.lifecycle = AgentLifecycle(self, self.scheduler, self.vrrp, self.dhcp)

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
                self.lifecycle.reconnect(agent)
            agent.heartbeat = self.clock.wall()
            if agent.agent_type == DHCP_AGENT:
                self.world.dhcp.reported(agent)
            for router in agent.routers.values():
                self.vrrp.sync_reported(router)
        self.schedule(self.clock.monotonic() + self.cfg.report_interval, self._heartbeat, agent)

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
            (agent.work.queue if notify else agent.work.sync_queue).append(router.id)
            self.pump(agent)
        self._after_weight_change(agent, overloaded)
        self.refresh(router)

    def unbind(self, router: RouterRec, agent: AgentRec) -> bool:
        """Unbind and tell the agent; a cut-off agent keeps running its copy."""
        overloaded = agent.weight > self.cfg.agent_capacity
        replica = self.world.unbind(router, agent)
        if replica is None:
            return False
        agent.work.inflight.pop(router.id, None)
        if replica.processed and agent.running and not self.can_report(agent):
            agent.stale[router.id] = replica
            router.stale[agent.id] = replica
        elif self.can_report(agent):
            sim_ports.torn_down(router, agent)
        self._after_weight_change(agent, overloaded)
        self.refresh(router)
        self.pump(agent)
        return True

    def pump(self, agent: AgentRec) -> None:
        """Start processing queued routers up to the agent's concurrency."""
        if not (agent.running and not agent.stopped and agent.admin_state_up):
            return
        now, work = self.clock.monotonic(), agent.work
        for router_id in work.next_up(self.cfg.agent_concurrency):
            router = self.world.routers.get(router_id)
            replica = router.bindings.get(agent.id) if router is not None else None
            if router is None or replica is None or replica.processed:
                continue
            ports = len(router.ports) + (1 if router.ha else 0)
            duration = (self.cfg.router_base_time + self.cfg.router_port_time * ports)
            done = now + duration * agent.slow_factor
            work.inflight[router.id] = done
            sim_ports.fetched(router, replica)
            self.schedule(done, self._processed, agent, router.id, work.generation, done)

    def _processed(self, agent: AgentRec, router_id: str, generation: int, done: float) -> None:
        if not agent.work.completed(router_id, generation, done):
            return  # the work was abandoned (unbound, killed, disabled) or restarted since
        router = self.world.routers.get(router_id)
        replica = router.bindings.get(agent.id) if router else None
        if router is not None and replica is not None:
            replica.processed = True
            if self.cfg.port_active_delay > 0 and not router.ha:
                up_at = self.clock.monotonic() + self.cfg.port_active_delay
                self.schedule(up_at, self._ports_up, router, replica, generation)
            else:
                sim_ports.wired(router, replica)
            self.refresh(router)
        self.pump(agent)

    def _ports_up(self, router: RouterRec, replica: Replica, generation: int) -> None:
        """The L2 agent reports the wired router's devices up (``port_active_delay``), unless
        the binding or the agent's work has changed since."""
        agent = replica.agent
        if (router.bindings.get(agent.id) is replica and replica.processed
                and generation == agent.work.generation):
            sim_ports.wired(router, replica)

    # --- HA and data plane ----------------------------------------------------------

    def refresh(self, router: RouterRec) -> None:
        """Re-derive VRRP, reported HA state, port host and forwarding of one router."""
        if router.ha:
            self.vrrp.check(router)
        self.vrrp.sync_reported(router)
        self.update_reachability(router)

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
        if self.gateway_forwards is not None:
            return self.gateway_forwards(router)
        forwarding = len(self.forwarding_copies(router))
        return forwarding >= 1 if router.ha else forwarding == 1

    def update_reachability(self, router: RouterRec) -> None:
        """Recompute whether the router is reachable (and tell the listeners if it changed)."""
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

    def retag(self, router: RouterRec, tags: list[str]) -> None:
        before = {r.agent.id: r.agent.weight > self.cfg.agent_capacity
                  for r in router.bindings.values()}
        self.world.set_tags(router, tags, self.clock.wall())
        for replica in list(router.bindings.values()):
            self._after_weight_change(replica.agent, before[replica.agent.id])
