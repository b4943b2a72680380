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
- an agent processes newly bound routers from a queue, ``agent_concurrency``
  at a time, each taking ``router_base_time + router_port_time * ports``
  (times its slow factor);
- a router forwards while some agent that has processed it forwards (for HA:
  the VRRP master); an agent forwards while it runs, its data plane works, it
  is administratively up and its busy weight is within ``agent_capacity``;
- HA: when no live replica is master, one is elected after
  ``ha_takeover_time``; a replica's state reaches the server only while its
  agent can report.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from datetime import datetime
from typing import Any

from l3ha.clock import Clock
from l3ha.emulator.config import EmulatorConfig
from l3ha.emulator.world import AgentRec, NetworkRec, Replica, RouterRec, World

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
        self.failover_moves = 0

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
            self.schedule(now + self.cfg.agent_down_time / 2, self._auto_failover)
        for router in self.world.routers.values():
            router.since = self.clock.wall()
            router.reachable = router.admin_state_up and self.router_forwards(router)
            router.down_since = None if router.reachable else now
            if router.reachable:
                self.on_reachability(router)

    def next_event_time(self) -> float | None:
        return self._events[0][0] if self._events else None

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
        now = self.clock.monotonic()
        return agent.running and now >= agent.partition_until and now >= self.broker_until

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
            agent.heartbeat = self.clock.wall()
            for router in agent.routers.values():
                self._sync_reported(router)
        self.schedule(self.clock.monotonic() + self.cfg.report_interval, self._heartbeat, agent)

    # --- router processing -----------------------------------------------------------

    def bind(self, router: RouterRec, agent: AgentRec) -> None:
        overloaded = agent.weight > self.cfg.agent_capacity
        self.world.bind(router, agent, self.ha_net, self.clock.wall())
        if len(router.bindings) == 1 and not router.ha:
            router.ports_host = agent.host
        agent.queue.append(router.id)
        self._pump(agent)
        self._after_weight_change(agent, overloaded)
        self.refresh(router)

    def unbind(self, router: RouterRec, agent: AgentRec) -> bool:
        overloaded = agent.weight > self.cfg.agent_capacity
        replica = self.world.unbind(router, agent)
        if replica is None:
            return False
        agent.inflight.pop(router.id, None)
        if not router.bindings:
            router.ports_host = ""
        elif not router.ha:
            router.ports_host = next(iter(router.bindings.values())).agent.host
        self._after_weight_change(agent, overloaded)
        self.refresh(router)
        self._pump(agent)
        return True

    def _pump(self, agent: AgentRec) -> None:
        """Start processing queued routers up to the agent's concurrency."""
        if not (agent.running and agent.admin_state_up):
            return
        now = self.clock.monotonic()
        while agent.queue and len(agent.inflight) < self.cfg.agent_concurrency:
            router = self.world.routers.get(agent.queue.popleft())
            if router is None or router.id in agent.inflight:
                continue
            replica = router.bindings.get(agent.id)
            if replica is None or replica.processed:
                continue
            ports = len(router.ports) + (1 if router.ha else 0)
            duration = (self.cfg.router_base_time + self.cfg.router_port_time * ports)
            done = now + duration * agent.slow_factor
            agent.inflight[router.id] = done
            self.schedule(done, self._processed, agent, router.id, agent.generation, done)

    def _processed(self, agent: AgentRec, router_id: str, generation: int, done: float) -> None:
        if generation != agent.generation or agent.inflight.get(router_id) != done:
            return  # the work was abandoned (unbound, killed, disabled) or restarted since
        del agent.inflight[router_id]
        router = self.world.routers.get(router_id)
        replica = router.bindings.get(agent.id) if router else None
        if router is not None and replica is not None:
            replica.processed = True
            self.refresh(router)
        self._pump(agent)

    def _requeue_all(self, agent: AgentRec) -> None:
        agent.generation += 1
        agent.inflight.clear()
        agent.queue.clear()
        for router in agent.routers.values():
            replica = router.bindings[agent.id]
            replica.processed = False
            replica.vrrp = "backup"
            agent.queue.append(router.id)

    # --- HA and data plane ----------------------------------------------------------

    def refresh(self, router: RouterRec) -> None:
        """Re-derive VRRP, reported HA state, port host and forwarding of one router."""
        if router.ha:
            self._check_vrrp(router)
        self._sync_reported(router)
        self._update_reachability(router)

    def _eligible(self, router: RouterRec) -> list[Replica]:
        return [r for r in router.bindings.values() if r.processed and self.vrrp_alive(r.agent)]

    def _check_vrrp(self, router: RouterRec) -> None:
        for replica in router.bindings.values():
            if replica.vrrp == "master" and not (replica.processed
                                                 and self.vrrp_alive(replica.agent)):
                replica.vrrp = "backup"
        has_master = any(r.vrrp == "master" for r in router.bindings.values())
        if not has_master and router.election_due is None and self._eligible(router):
            router.election_due = self.clock.monotonic() + self.cfg.ha_takeover_time
            self.schedule(router.election_due, self._elect, router.id)

    def _elect(self, router_id: str) -> None:
        router = self.world.routers.get(router_id)
        if router is None:
            return
        router.election_due = None
        eligible = self._eligible(router)
        if eligible and not any(r.vrrp == "master" for r in eligible):
            eligible[0].vrrp = "master"
        self.refresh(router)

    def split_brain(self, router: RouterRec, seconds: float) -> int:
        """Make every eligible replica master for ``seconds``; return how many."""
        eligible = self._eligible(router)
        for replica in eligible:
            replica.vrrp = "master"
        router.split_brain_until = self.clock.monotonic() + seconds
        self.schedule(router.split_brain_until, self._heal_split_brain, router.id)
        self.refresh(router)
        return len(eligible)

    def _heal_split_brain(self, router_id: str) -> None:
        router = self.world.routers.get(router_id)
        if router is None or self.clock.monotonic() < router.split_brain_until:
            return
        masters = [r for r in router.bindings.values() if r.vrrp == "master"]
        for replica in masters[1:]:
            replica.vrrp = "backup"
        self.refresh(router)

    def _sync_reported(self, router: RouterRec) -> None:
        if not router.ha:
            return
        for replica in router.bindings.values():
            if not self.can_report(replica.agent):
                continue
            state = "active" if replica.vrrp == "master" else "standby"
            if state != replica.reported:
                replica.reported = state
                if state == "active":
                    router.ports_host = replica.agent.host

    def router_forwards(self, router: RouterRec) -> bool:
        for replica in router.bindings.values():
            if not (replica.processed and self.forwards(replica.agent)):
                continue
            if not router.ha or replica.vrrp == "master":
                return True
        return False

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

    def kill(self, agent: AgentRec) -> None:
        """The node dies: no heartbeats, no processing, no forwarding."""
        agent.running = False
        agent.generation += 1
        agent.inflight.clear()
        agent.queue.clear()
        self.refresh_agent(agent)

    def revive(self, agent: AgentRec) -> None:
        """The agent (re)starts: new started_at and a heartbeat at once. A dead node or
        broken data plane comes back and resyncs every router (dark until processed); a
        healthy one only restarts its process (routers keep forwarding)."""
        healthy = agent.running and agent.dataplane_ok
        agent.running = True
        agent.dataplane_ok = True
        agent.started_at = self.clock.wall()
        if self.can_report(agent):
            agent.heartbeat = agent.started_at
        if healthy:
            return
        self._requeue_all(agent)
        self.refresh_agent(agent)
        self._pump(agent)

    def set_admin_state(self, agent: AgentRec, up: bool) -> None:
        """Disabled agents tear their routers down (bindings stay); enabling resyncs."""
        if agent.admin_state_up == up:
            return
        agent.admin_state_up = up
        self._requeue_all(agent)
        if not up:
            agent.queue.clear()
        self.refresh_agent(agent)
        self._pump(agent)

    def dataplane_fail(self, agent: AgentRec) -> None:
        agent.dataplane_ok = False
        self.refresh_agent(agent)

    def mgmt_partition(self, agent: AgentRec, seconds: float) -> None:
        agent.partition_until = self.clock.monotonic() + seconds

    def broker_outage(self, seconds: float) -> None:
        self.broker_until = self.clock.monotonic() + seconds

    def slow_agent(self, agent: AgentRec, factor: float) -> None:
        agent.slow_factor = factor

    def retag(self, router: RouterRec, tags: list[str]) -> None:
        before = {r.agent.id: r.agent.weight > self.cfg.agent_capacity
                  for r in router.bindings.values()}
        self.world.set_tags(router, tags, self.clock.wall())
        for replica in list(router.bindings.values()):
            self._after_weight_change(replica.agent, before[replica.agent.id])

    # --- Neutron's allow_automatic_l3agent_failover -----------------------------------------

    def _auto_failover(self) -> None:
        self.schedule(self.clock.monotonic() + self.cfg.agent_down_time / 2, self._auto_failover)
        now = self.clock.wall()
        limit = 2 * self.cfg.agent_down_time
        for agent in self.world.l3_agents():
            if not agent.admin_state_up or (now - agent.heartbeat).total_seconds() <= limit:
                continue
            for router in list(agent.routers.values()):
                if router.ha:
                    continue
                target = self._least_routers_target(router, now)
                self.unbind(router, agent)
                if target is not None:
                    self.bind(router, target)
                    self.failover_moves += 1

    def _least_routers_target(self, router: RouterRec, now: datetime) -> AgentRec | None:
        modes = {"dvr_snat"} if router.distributed else {"legacy", "dvr_snat"}
        candidates = [a for a in self.world.l3_agents()
                      if a.mode in modes and a.admin_state_up and self.is_alive(a, now)
                      and a.id not in router.bindings]
        if not candidates:
            return None
        return min(candidates, key=lambda a: (len(a.routers), a.index))
