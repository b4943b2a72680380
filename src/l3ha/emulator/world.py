"""The emulated cloud: its records (``records``) with indices and counters. Pure.

Every change that affects a counter goes through a ``World``
method so per-agent counters stay current without scanning routers. Callers
hold ``World.lock`` around every read and write. Ids are UUIDs drawn from a
generator seeded with the configuration's seed, so the same configuration
builds the same cloud.
"""

from __future__ import annotations

import random
import threading
from datetime import datetime

from l3ha.emulator.dhcp_world import DhcpPortRec, DhcpTables, dhcp_device_id
from l3ha.emulator.records import (
    DHCP_AGENT,
    OWNER_HA_INTERFACE,
    AgentRec,
    FipRec,
    NetworkRec,
    PortRec,
    Replica,
    RouterRec,
    router_weight,
)

UUID_FIXED_MASK = (0xF000 << 64) | (0xC000 << 48)  # version nibble and variant bits
UUID_V4_BITS = (0x4000 << 64) | (0x8000 << 48)


class World:
    """Every record of the emulated cloud, with indices and current counters."""

    def __init__(self, seed: int) -> None:
        self.lock = threading.RLock()
        self._rng = random.Random(seed)
        self._mac_counter = 0
        self._ip_counter = 0
        self.project_id = self.new_id().replace("-", "")
        self.agents: dict[str, AgentRec] = {}
        self.agents_by_host: dict[str, AgentRec] = {}
        self.routers: dict[str, RouterRec] = {}
        self.ports: dict[str, PortRec] = {}
        self.networks: dict[str, NetworkRec] = {}
        self.fips: dict[str, FipRec] = {}
        self.dhcp = DhcpTables()
        self._routers_by_id: list[RouterRec] | None = None

    # --- ids and addresses --------------------------------------------------

    def new_id(self) -> str:
        """A random (version 4) UUID string from the seeded generator."""
        n = (self._rng.getrandbits(128) & ~UUID_FIXED_MASK) | UUID_V4_BITS
        h = f"{n:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def new_mac(self) -> str:
        self._mac_counter += 1
        n = self._mac_counter
        return f"fa:16:3e:{(n >> 16) & 255:02x}:{(n >> 8) & 255:02x}:{n & 255:02x}"

    def new_public_ip(self) -> str:
        self._ip_counter += 1
        n = self._ip_counter
        return f"172.{24 + (n >> 16) % 8}.{(n >> 8) & 255}.{n & 255}"

    # --- creation -----------------------------------------------------------

    def add_network(self, name: str, cidr_base: str, external: bool,
                    now: datetime) -> NetworkRec:
        net = NetworkRec(self.new_id(), self.new_id(), name, cidr_base, external,
                         self.project_id, now)
        self.networks[net.id] = net
        return net

    def add_agent(self, host: str, az: str, agent_type: str, mode: str,
                  now: datetime) -> AgentRec:
        agent = AgentRec(self.new_id(), len(self.agents), host, az, agent_type, mode, now)
        self.agents[agent.id] = agent
        if agent.is_l3:
            self.agents_by_host[host] = agent
        elif agent_type == DHCP_AGENT:  # a DHCP-only node is found by its host too
            self.dhcp.add_agent(agent)
            self.agents_by_host.setdefault(host, agent)
        return agent

    def add_router(self, name: str, network: NetworkRec, now: datetime) -> RouterRec:
        router = RouterRec(self.new_id(), len(self.routers), name, self.project_id, network, now)
        self.routers[router.id] = router
        self._routers_by_id = None
        return router

    def delete_router(self, router: RouterRec) -> None:
        """Forget a router with no bindings left, with its ports and floating IPs."""
        for port in router.ports:
            self.ports.pop(port.id, None)
        for fip in router.fips:
            self.fips.pop(fip.id, None)
        del self.routers[router.id]
        self._routers_by_id = None

    def routers_by_id(self) -> list[RouterRec]:
        """Routers sorted by id (cached until a router is added or deleted)."""
        if self._routers_by_id is None:
            self._routers_by_id = sorted(self.routers.values(), key=lambda r: r.id)
        return self._routers_by_id

    def add_port(self, router: RouterRec, network: NetworkRec, ip: str, owner: str,
                 now: datetime) -> PortRec:
        port = PortRec(self.new_id(), self.new_mac(), network, ip, owner, router, now)
        self.ports[port.id] = port
        if owner != OWNER_HA_INTERFACE:
            router.ports.append(port)
        return port

    def add_dhcp_port(self, network: NetworkRec, ip: str, host: str, now: datetime) -> DhcpPortRec:
        """A new DHCP port of the DHCP agent on ``host`` (its device id) on ``network``."""
        device_id = dhcp_device_id(network.id, host)
        port = DhcpPortRec(self.new_id(), self.new_mac(), network, ip, device_id, host, now)
        self.dhcp.add_port(port)
        return port

    def add_fip(self, router: RouterRec, fixed: str, now: datetime) -> FipRec:
        fip = FipRec(self.new_id(), router, self.new_public_ip(), fixed, self.new_id(), now)
        self.fips[fip.id] = fip
        router.fips.append(fip)
        return fip

    # --- bindings and counters ----------------------------------------------

    def _count(self, agent: AgentRec, router: RouterRec, sign: int) -> None:
        agent.ex_gw_ports += sign * (1 if router.has_gateway else 0)
        agent.interfaces += sign * router.interfaces
        agent.floating_ips += sign * len(router.fips)
        agent.weight += sign * router.weight

    def bind(self, router: RouterRec, agent: AgentRec, ha_network: NetworkRec | None,
             now: datetime) -> Replica:
        """Record that ``agent`` hosts ``router`` (creating the HA port for HA routers)."""
        replica = Replica(agent)
        router.bindings[agent.id] = replica
        agent.routers[router.id] = router
        self._count(agent, router, +1)
        if router.ha and ha_network is not None:
            n = len(self.ports) % 65000
            ip = f"169.254.{192 + (n >> 8) % 64}.{n & 255}"
            port = self.add_port(router, ha_network, ip, OWNER_HA_INTERFACE, now)
            port.replica = replica
            replica.ha_port = port
        return replica

    def unbind(self, router: RouterRec, agent: AgentRec) -> Replica | None:
        """Remove the binding (and its HA port); None when there was none."""
        replica = router.bindings.pop(agent.id, None)
        if replica is None:
            return None
        agent.routers.pop(router.id, None)
        self._count(agent, router, -1)
        if replica.ha_port is not None:
            self.ports.pop(replica.ha_port.id, None)
            replica.ha_port = None
        return replica

    def set_tags(self, router: RouterRec, tags: list[str], now: datetime) -> None:
        """Replace the router's tags, keeping agents' busy weight current."""
        router.tags = sorted(set(tags))
        new_weight = router_weight(router.tags)
        for replica in router.bindings.values():
            replica.agent.weight += new_weight - router.weight
        router.weight = new_weight
        self.touch(router, now)

    def touch(self, router: RouterRec, now: datetime) -> None:
        router.updated_at = now
        router.revision += 1

    def node_agents(self, agent: AgentRec) -> list[AgentRec]:
        """The agent and the other agents on its host (a node runs an L3 and a DHCP agent)."""
        others = (self.agents_by_host.get(agent.host), self.dhcp.agents_by_host.get(agent.host))
        return [agent, *(a for a in others if a is not None and a is not agent)]

    def l3_agents(self) -> list[AgentRec]:
        return [a for a in self.agents.values() if a.is_l3]
