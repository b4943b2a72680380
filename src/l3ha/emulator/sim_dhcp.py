"""The simulated DHCP agents: network set-up, DHCP ports, resyncs, auto-scheduling.

No I/O, but not pure: it changes the world on the simulation's clock.

Runs on the simulation's clock (``sim``); callers hold ``world.lock``. What neutron 29
does (neutron/agent/dhcp/agent.py, neutron/agent/linux/dhcp.py,
neutron/api/rpc/handlers/dhcp_rpc.py, neutron/scheduler/dhcp_agent_scheduler.py) and how
it is modelled:

- A DHCP agent heartbeats like an L3 agent (``sim``); its report carries the networks,
  subnets and ports of the networks it has set up, and the server stores the networks
  count as the agent's ``load``. The API shows the configurations of the last report.
- The agent learns of a new binding by a ``network_create_end`` cast
  (``network_added_to_agent``): lost while it is cut off from the bus. It sets
  ``dhcp_concurrency`` networks up at once, cast ones ahead of resync work, each taking
  ``dhcp_network_time`` (times its slow factor). Setting up first gets the DHCP port:
  its own (device id ``dhcp<uuid5(host)>-<network>``), else the network's reserved one
  (claimed: device id and ``binding:host_id`` now its own), else a new one; the port is
  ``BUILD`` while the agent and its L2 agent wire it and ``ACTIVE`` when done. A network
  without a DHCP-enabled subnet (bound by hand, or the external network) gets no port:
  the agent has nothing to serve there (seen on the real stack, docs/realstack.md). A
  DHCP-enabled subnet created later (``subnet_create_end``) has its hosting agents set the
  network up again, now with a port, before the network is scheduled.
- Removing a network from an agent (``network_removed_from_agent``) re-labels its port
  ``reserved_dhcp_port`` on the server (still bound to the old host); the agent, when
  told, disables DHCP and its L2 agent reports the device down (``DOWN``). An agent that
  was cut off, or not told (the automatic failover does not notify), goes on serving
  the network (a stale copy) until its next resync.
- A full resync (start, revival, reconnection, ``agent_updated``) first runs
  ``auto_schedule_networks`` for the agent's host (``network_auto_schedule``, on by
  default): for an enabled, live agent, every network with a DHCP subnet that has fewer
  than ``dhcp_agents_per_network`` bindings (dead agents' count), is not on this agent
  and whose availability zone hints (if any) name the agent's zone is bound to it. Then
  stale copies go and unprocessed bindings are queued. A disabled agent's resync gets no
  networks: it disables DHCP everywhere, and ``release_dhcp_port`` deletes its ports
  (the bindings stay).
- A dead node keeps its ports as the server last saw them (``ACTIVE``): nothing reports
  them down.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from l3ha.emulator.dhcp_world import (
    RESERVED_DEVICE_ID,
    DhcpAgentWork,
    DhcpBinding,
    DhcpPortRec,
    DhcpTables,
    dhcp_device_id,
)
from l3ha.emulator.records import DHCP_AGENT, AgentRec, NetworkRec
from l3ha.emulator.sim_core import SimCore

STARTUP_SECONDS_PER_NETWORK = 2.0  # agent_starting_up's extra time per bound network


class DhcpSimulation:
    """The DHCP agents' side of the simulation; ``auto_scheduled`` counts resync bindings."""

    def __init__(self, sim: SimCore) -> None:
        self.sim = sim
        self.cfg = sim.cfg
        self.world = sim.world
        self.tables: DhcpTables = sim.world.dhcp
        self.auto_scheduled = 0
        self.resyncs = 0

    def agents(self) -> list[AgentRec]:
        return [a for a in self.world.agents.values() if a.agent_type == DHCP_AGENT]

    def _work(self, agent: AgentRec) -> DhcpAgentWork:
        return self.tables.work[agent.id]

    # --- server side: bindings -----------------------------------------------------

    def add(self, network: NetworkRec, agent: AgentRec, notify: bool = True) -> DhcpBinding:
        """Bind, then ``network_added_to_agent`` (``notify``) or leave it to the resync."""
        binding = self.tables.bind(network, agent)
        work = self._work(agent)
        if network.id in work.stale:  # it never stopped serving it
            work.stale.discard(network.id)
            binding.processed = True
            if network.id in self.tables.tenant_networks:  # a DHCP subnet: a port
                self._claim_port(binding, ready=True)
        elif self.sim.can_report(agent):
            (work.queue if notify else work.sync_queue).append(network.id)
            self._pump(agent)
        return binding

    def remove(self, network: NetworkRec, agent: AgentRec, notify: bool = True) -> bool:
        """Unbind and reserve the agent's port; tell the agent when ``notify``."""
        binding = self.tables.unbind(network, agent)
        if binding is None:
            return False
        work = self._work(agent)
        work.inflight.pop(network.id, None)
        port = self.tables.port_of(network, agent.host)
        if port is not None:
            self._touch(port)
            port.device_id = RESERVED_DEVICE_ID
        serving = network.id in work.serving
        if notify and self.sim.can_report(agent):
            self._disable(agent, network, port)
        elif serving and agent.running:
            work.stale.add(network.id)
        self._pump(agent)
        return True

    def _touch(self, port: DhcpPortRec) -> None:
        port.updated_at = self.sim.clock.wall()
        port.revision += 1

    # --- agent side: setting networks up -------------------------------------------

    def _pump(self, agent: AgentRec) -> None:
        if not (agent.running and not agent.stopped and agent.admin_state_up):
            return
        work = self._work(agent)
        now = self.sim.clock.monotonic()
        for net_id in work.next_up(self.cfg.dhcp_concurrency):
            binding = self.tables.networks_of(agent).get(net_id)
            if binding is None or binding.processed:
                continue
            done = now + self.cfg.dhcp_network_time * agent.slow_factor
            work.inflight[net_id] = done
            if net_id in self.tables.tenant_networks:  # a DHCP subnet: a port
                self._claim_port(binding, ready=False)
            self.sim.schedule(done, self._processed, agent, net_id, work.generation, done)

    def subnet_created(self, network: NetworkRec) -> list[AgentRec]:
        """``subnet_create_end`` of a DHCP-enabled subnet: every hosting agent on the bus
        sets the network up again (now with a port), then the network is scheduled."""
        for binding in self.tables.bindings_of(network.id).values():
            agent = binding.agent
            if binding.processed and self.sim.can_report(agent):
                binding.processed = False
                self._work(agent).queue.append(network.id)
                self._pump(agent)
        return self.schedule(network)

    def _claim_port(self, binding: DhcpBinding, ready: bool) -> DhcpPortRec:
        """``setup_dhcp_port``: its own port, else the reserved one, else a new one."""
        network, agent = binding.network, binding.agent
        port = self.tables.port_of(network, agent.host)
        if port is None:
            port = self.tables.reserved_port(network)
            if port is not None:
                self._touch(port)
                port.device_id = dhcp_device_id(network.id, agent.host)
                port.host = agent.host
        if port is None:
            ip = f"{network.cidr_base}.{2 + self.tables.network_ports(network.id)}"
            port = self.world.add_dhcp_port(network, ip, agent.host, self.sim.clock.wall())
        status = "ACTIVE" if ready else "BUILD"
        if port.status != status:
            self._touch(port)
            port.status = status
        return port

    def _processed(self, agent: AgentRec, net_id: str, generation: int, done: float) -> None:
        work = self.tables.work.get(agent.id)
        if work is None or not work.completed(net_id, generation, done):
            return  # abandoned (removed, killed, disabled) or restarted since
        binding = self.tables.networks_of(agent).get(net_id)
        if binding is not None:
            binding.processed = True
            work.serving.add(net_id)
            if net_id in self.tables.tenant_networks:  # a DHCP subnet: a port
                self._claim_port(binding, ready=True)
        self._pump(agent)

    def _disable(self, agent: AgentRec, network: NetworkRec, port: DhcpPortRec | None) -> None:
        """``disable_dhcp_helper``: dnsmasq stops, ``release_dhcp_port`` deletes the port
        with the agent's device id (a re-labelled one stays), the device goes down."""
        work = self._work(agent)
        work.serving.discard(network.id)
        work.stale.discard(network.id)
        if port is None:
            return
        if port.device_id == dhcp_device_id(network.id, agent.host):
            self.tables.delete_port(port)
        elif port.host == agent.host and port.status != "DOWN":
            self._touch(port)
            port.status = "DOWN"

    # --- agent life cycle ------------------------------------------------------------

    def killed(self, agent: AgentRec) -> None:
        """The node died: dnsmasq and the agent's cache are gone; ports stay as they were."""
        work = self._work(agent).abandon()
        work.serving.clear()
        work.stale.clear()
        self.tables.unprocess(agent)

    def stopped(self, agent: AgentRec) -> None:
        """The agent process stopped (an upgrade): work in progress is lost (set up again at
        its resync); the networks it set up keep being served by their dnsmasq."""
        self._work(agent).abandon()

    def resync(self, agent: AgentRec) -> None:
        """The agent is back on the bus: it reports, then ``sync_state``: auto-schedule,
        drop stale copies and set every binding up."""
        self.tables.reported(agent)
        self.resyncs += 1
        work = self._work(agent)
        if not agent.admin_state_up:
            self._disable_all(agent)
            return
        self.auto_schedule(agent)
        work.serving &= self.world.networks.keys()  # networks deleted meanwhile
        for net_id in list(work.stale):
            network = self.world.networks.get(net_id)
            if network is not None:
                self._disable(agent, network, self.tables.reserved_port(network, agent.host))
        work.stale.clear()
        work.resync(n for n, b in self.tables.networks_of(agent).items() if not b.processed)
        self._pump(agent)

    def _disable_all(self, agent: AgentRec) -> None:
        work = self._work(agent).abandon()
        for net_id in list(work.serving | work.stale):
            network = self.world.networks.get(net_id)
            if network is not None:
                self._disable(agent, network, self.tables.port_of(network, agent.host))
        self.tables.unprocess(agent)

    def admin_changed(self, agent: AgentRec) -> None:
        """``agent_updated``: the agent resyncs (a disabled one disables every network)."""
        if self.sim.can_report(agent):
            self.resync(agent)

    def auto_schedule(self, agent: AgentRec) -> list[NetworkRec]:
        """``auto_schedule_networks`` for the agent's host."""
        if not (
            self.cfg.network_auto_schedule and agent.admin_state_up and self.sim.is_alive(agent)
        ):
            return []
        per_network = self.cfg.dhcp_agents_per_network
        chosen = [
            n
            for n in self.tables.tenant_networks.values()
            if len(self.tables.bindings_of(n.id)) < per_network
            and agent.id not in self.tables.bindings_of(n.id)
            and (not n.az_hints or agent.az in n.az_hints)
        ]
        for network in chosen:
            self.add(network, agent, notify=False)
        self.auto_scheduled += len(chosen)
        return chosen

    # --- scheduling (WeightScheduler over DHCP agents) ---------------------------------

    def starting_up(self, agent: AgentRec, limit: float, now: datetime) -> bool:
        """``agent_starting_up``: started less than ``limit`` + 2 s per bound network ago."""
        networks = len(self.tables.networks_of(agent))
        grace = timedelta(seconds=limit + STARTUP_SECONDS_PER_NETWORK * networks)
        return agent.started_at + grace > now

    def eligible(self, agent: AgentRec, limit: float, now: datetime) -> bool:
        """The DHCP ``is_eligible_agent(active=True)``: alive, or still starting up."""
        return self.sim.is_alive(agent, now) or self.starting_up(agent, limit, now)

    def schedule(self, network: NetworkRec, eligible: set[str] | None = None) -> list[AgentRec]:
        """``schedule_network``: top the network up to ``dhcp_agents_per_network`` with the
        enabled, eligible agents (alive or starting up, unless ``eligible`` names them) of
        least load (the networks count of their last report)."""
        if not self.cfg.network_auto_schedule:
            return []
        hosted = self.tables.bindings_of(network.id)
        needed = self.cfg.dhcp_agents_per_network - len(hosted)
        if needed <= 0:
            return []
        now = self.sim.clock.wall()
        limit = 2 * self.cfg.agent_down_time
        candidates = [
            a
            for a in self.agents()
            if a.admin_state_up
            and a.id not in hosted
            and (not network.az_hints or a.az in network.az_hints)
            and (a.id in eligible if eligible is not None else self.eligible(a, limit, now))
        ]
        candidates.sort(key=lambda a: (self._work(a).load, a.index))
        chosen = candidates[:needed]
        for agent in chosen:
            self.add(network, agent)
        return chosen

    # --- views -----------------------------------------------------------------------------

    def configurations(self, agent: AgentRec) -> dict[str, int]:
        return dict(self._work(agent).reported)

    def served_by_live_agent(self, network: NetworkRec) -> bool:
        """Some agent that runs serves DHCP on the network (set up, enabled)."""
        return any(
            b.processed and b.agent.running and b.agent.admin_state_up
            for b in self.tables.bindings_of(network.id).values()
        )

    def agent_rows(self, now: datetime) -> list[dict[str, object]]:
        """One row per DHCP agent for ``/_emulator/state``."""
        rows: list[dict[str, object]] = []
        for agent in self.agents():
            work = self._work(agent)
            rows.append(
                {
                    "host": agent.host,
                    "id": agent.id,
                    "alive": self.sim.is_alive(agent, now),
                    "running": agent.running,
                    "admin_state_up": agent.admin_state_up,
                    "connected": self.sim.can_report(agent),
                    "networks": len(self.tables.networks_of(agent)),
                    "serving": len(work.serving),
                    "stale": len(work.stale),
                    "queued": len(work.queue) + len(work.sync_queue),
                    "processing": len(work.inflight),
                }
            )
        return rows

    def summary(self) -> dict[str, int]:
        """Counts for ``/_emulator/state``."""
        networks = list(self.tables.tenant_networks.values())
        ports = self.tables.ports.values()
        return {
            "networks": len(networks),
            "unhosted": sum(1 for n in networks if not self.tables.bindings_of(n.id)),
            "unserved": sum(1 for n in networks if not self.served_by_live_agent(n)),
            "ports": len(ports),
            "ports_active": sum(1 for p in ports if p.status == "ACTIVE"),
            "ports_reserved": sum(1 for p in ports if p.device_id == RESERVED_DEVICE_ID),
            "auto_scheduled": self.auto_scheduled,
        }
