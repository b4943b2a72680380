"""The emulated cloud's DHCP records: network <-> DHCP agent bindings and DHCP ports. Pure.

Held by ``World.dhcp``; callers hold ``World.lock``. What Neutron stores and how it is
kept here (neutron/db/agentschedulers_db.py, neutron/api/rpc/handlers/dhcp_rpc.py):

- a binding (``networkdhcpagentbindings``) says a DHCP agent hosts a network; the
  agent-side state (``processed``: the agent has set the network up) rides along;
- a DHCP port (``device_owner network:dhcp``) is created by the agent when it sets a
  network up, with ``device_id`` ``dhcp<uuid5(host)>-<network id>`` and
  ``binding:host_id`` its host; removing the network from the agent does not delete
  it: the server re-labels it ``device_id reserved_dhcp_port`` ("so the IP is reused
  on a subsequent add") and the next agent to set the network up claims it;
- per agent, what its state reports carry: networks, subnets and ports of the networks
  it has set up (the agent's cache), and ``load`` — the networks count of its last
  report, which the WeightScheduler sorts candidates by.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime

from l3ha.emulator.records import AgentRec, NetworkRec, Work

OWNER_DHCP = "network:dhcp"
RESERVED_DEVICE_ID = "reserved_dhcp_port"


def dhcp_device_id(network_id: str, host: str) -> str:
    """Neutron's ``get_dhcp_agent_device_id``: ``dhcp<uuid5(DNS, short host)>-<network>``."""
    host_uuid = uuid.uuid5(uuid.NAMESPACE_DNS, host.split(".", maxsplit=1)[0])
    return f"dhcp{host_uuid}-{network_id}"


@dataclass(slots=True, eq=False)
class DhcpPortRec:
    """A DHCP port of one network."""

    id: str
    mac: str
    network: NetworkRec
    ip: str
    device_id: str
    host: str
    created_at: datetime
    status: str = "DOWN"
    updated_at: datetime = field(init=False)
    revision: int = 1

    def __post_init__(self) -> None:
        self.updated_at = self.created_at


@dataclass(slots=True, eq=False)
class DhcpBinding:
    """A network's binding to one DHCP agent, with what the agent has done with it."""

    network: NetworkRec
    agent: AgentRec
    processed: bool = False


@dataclass(slots=True, eq=False)
class DhcpAgentWork(Work):
    """One DHCP agent's processing state: its networks to set up (``Work``) and its cache."""

    # networks removed while the agent was cut off: it still serves them
    stale: set[str] = field(default_factory=set)
    # networks the agent has set up (its cache): what its reports count
    serving: set[str] = field(default_factory=set)
    # its last state report's counts, and their networks count (the scheduler's "load")
    reported: dict[str, int] = field(
        default_factory=lambda: {"networks": 0, "subnets": 0, "ports": 0}
    )
    load: int = 0


class DhcpTables:
    """Every DHCP binding and port, indexed both ways."""

    def __init__(self) -> None:
        self.tenant_networks: dict[str, NetworkRec] = {}  # networks with a DHCP subnet
        self.by_network: dict[str, dict[str, DhcpBinding]] = {}
        self.by_agent: dict[str, dict[str, DhcpBinding]] = {}
        self.ports: dict[str, DhcpPortRec] = {}
        self.ports_by_network: dict[str, list[DhcpPortRec]] = {}
        self.work: dict[str, DhcpAgentWork] = {}
        self.agents_by_host: dict[str, AgentRec] = {}

    # --- agents and networks --------------------------------------------------------

    def add_agent(self, agent: AgentRec) -> None:
        self.agents_by_host[agent.host] = agent
        self.by_agent[agent.id] = {}
        self.work[agent.id] = DhcpAgentWork()

    def forget_agent(self, agent: AgentRec) -> list[DhcpBinding]:
        """The agent record is deleted: its bindings go (cascade); return them."""
        gone = list(self.by_agent.pop(agent.id, {}).values())
        for binding in gone:
            self.by_network.get(binding.network.id, {}).pop(agent.id, None)
        self.work.pop(agent.id, None)
        if self.agents_by_host.get(agent.host) is agent:
            del self.agents_by_host[agent.host]
        return gone

    def add_dhcp_network(self, network: NetworkRec) -> None:
        """A network with a DHCP-enabled subnet: one Neutron schedules to DHCP agents."""
        self.tenant_networks[network.id] = network

    def forget_network(self, network: NetworkRec) -> None:
        self.tenant_networks.pop(network.id, None)
        self.by_network.pop(network.id, None)
        for port in self.ports_by_network.pop(network.id, []):
            self.ports.pop(port.id, None)

    def bindings_of(self, network_id: str) -> dict[str, DhcpBinding]:
        return self.by_network.get(network_id, {})

    def networks_of(self, agent: AgentRec) -> dict[str, DhcpBinding]:
        return self.by_agent.get(agent.id, {})

    def unprocess(self, agent: AgentRec) -> None:
        """The agent's cache is gone: none of its networks is set up any more."""
        for binding in self.networks_of(agent).values():
            binding.processed = False

    # --- bindings -----------------------------------------------------------------

    def bind(self, network: NetworkRec, agent: AgentRec) -> DhcpBinding:
        binding = DhcpBinding(network, agent)
        self.by_network.setdefault(network.id, {})[agent.id] = binding
        self.by_agent.setdefault(agent.id, {})[network.id] = binding
        return binding

    def unbind(self, network: NetworkRec, agent: AgentRec) -> DhcpBinding | None:
        binding = self.by_network.get(network.id, {}).pop(agent.id, None)
        if binding is not None:
            self.by_agent.get(agent.id, {}).pop(network.id, None)
        return binding

    # --- ports --------------------------------------------------------------------

    def port_of(self, network: NetworkRec, host: str) -> DhcpPortRec | None:
        """The port whose device id is ``host``'s DHCP device id for ``network``."""
        device_id = dhcp_device_id(network.id, host)
        return next(
            (p for p in self.ports_by_network.get(network.id, []) if p.device_id == device_id), None
        )

    def reserved_port(self, network: NetworkRec, host: str | None = None) -> DhcpPortRec | None:
        """The network's first re-labelled port (still bound to ``host``, when given)."""
        ports = self.ports_by_network.get(network.id, [])
        reserved = (p for p in ports if p.device_id == RESERVED_DEVICE_ID)
        return next((p for p in reserved if host is None or p.host == host), None)

    def add_port(self, port: DhcpPortRec) -> None:
        self.ports[port.id] = port
        self.ports_by_network.setdefault(port.network.id, []).append(port)

    def delete_port(self, port: DhcpPortRec) -> None:
        self.ports.pop(port.id, None)
        ports = self.ports_by_network.get(port.network.id, [])
        if port in ports:
            ports.remove(port)

    def network_ports(self, network_id: str) -> int:
        return len(self.ports_by_network.get(network_id, []))

    # --- what an agent's state report carries ----------------------------------------

    def reported(self, agent: AgentRec) -> None:
        """A state report of the agent reached the server: its ``networks``, ``subnets`` and
        ``ports`` (of the networks it has set up) and its load (the networks count)."""
        work = self.work[agent.id]
        subnets = sum(1 for n in work.serving if n in self.tenant_networks)
        ports = sum(self.network_ports(n) for n in work.serving)
        work.reported = {"networks": len(work.serving), "subnets": subnets, "ports": ports}
        work.load = len(work.serving)
