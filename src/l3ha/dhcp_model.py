"""The DHCP side of the cloud: networks, their DHCP agents, DHCP ports, plans. Pure.

A network node runs a DHCP agent next to its L3 agent. Neutron schedules
each network (with a DHCP-enabled subnet) to ``dhcp_agents_per_network``
DHCP agents (default 1); each binding gets one DHCP port (``device_owner``
``network:dhcp``, ``binding:host_id`` the agent's host) that turns ACTIVE once
the agent has set the network up. DHCP agents are ``l3ha.model.Agent`` objects
(their ``mode`` is meaningless and stays ``legacy``), so the health module and
the fleet gates judge them exactly as they judge L3 agents.

Every object is frozen; agent references (host name, id, id prefix) are
resolved here with one-line errors, and an L3 agent given where a DHCP agent
is expected is named as such.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property

from l3ha.errors import NotFoundError
from l3ha.model import Agent, AgentView, IdIndex, group_by, resolve_agent

DHCP_AGENT_TYPE = "DHCP agent"
DHCP_PORT_OWNER = "network:dhcp"
#: The ``device_id`` Neutron gives a DHCP port it keeps after removing its network from an agent.
RESERVED_DEVICE_ID = "reserved_dhcp_port"
#: Neutron's default ``dhcp_agents_per_network``.
DEFAULT_AGENTS_PER_NETWORK = 1


@dataclass(frozen=True, slots=True)
class Network:
    """One Neutron network and what DHCP placement cares about.

    ``needs_dhcp``: it has a subnet with DHCP enabled (Neutron schedules only
    those networks; one without is not an audit finding when unhosted).
    """

    id: str
    name: str = ""
    availability_zone_hints: tuple[str, ...] = ()
    project_id: str = ""
    admin_state_up: bool = True
    needs_dhcp: bool = True


@dataclass(frozen=True, slots=True)
class DhcpBinding:
    """Network ``network_id`` is scheduled to DHCP agent ``agent_id``."""

    network_id: str
    agent_id: str


@dataclass(frozen=True, slots=True)
class DhcpPort:
    """One DHCP port: its network, the host it is bound to and its status."""

    id: str
    network_id: str
    host: str
    status: str
    device_id: str = ""

    @property
    def active(self) -> bool:
        return self.status == "ACTIVE"

    @property
    def reserved(self) -> bool:
        """Kept by Neutron after its network left the agent (still bound to the old host)."""
        return self.device_id == RESERVED_DEVICE_ID


@dataclass(frozen=True, slots=True)
class OtherAgent:
    """An agent of another type (L3, Open vSwitch, ...): kept to name it in errors."""

    id: str
    host: str
    agent_type: str


@dataclass(frozen=True)
class DhcpSnapshot(AgentView):
    """DHCP agents, networks, bindings and DHCP ports as observed at one moment."""

    networks: tuple[Network, ...]
    bindings: tuple[DhcpBinding, ...]
    ports: tuple[DhcpPort, ...] = ()
    other_agents: tuple[OtherAgent, ...] = ()
    observed_at: str = ""

    networks_by_id = IdIndex[Network]("networks")

    @cached_property
    def _by_network(self) -> Mapping[str, tuple[str, ...]]:
        by_network = group_by(self.bindings, lambda b: b.network_id)
        return {k: tuple(sorted(b.agent_id for b in v)) for k, v in by_network.items()}

    @cached_property
    def _by_agent(self) -> Mapping[str, tuple[str, ...]]:
        by_agent = group_by(self.bindings, lambda b: b.agent_id)
        return {k: tuple(sorted(b.network_id for b in v)) for k, v in by_agent.items()}

    @cached_property
    def _ports_by_host(self) -> Mapping[str, int]:
        return Counter(p.host for p in self.ports if not p.reserved)

    def agents_of_network(self, network_id: str) -> tuple[str, ...]:
        """Ids of the DHCP agents hosting one network (sorted)."""
        return self._by_network.get(network_id, ())

    def networks_of_agent(self, agent_id: str) -> tuple[str, ...]:
        """Ids of the networks one DHCP agent hosts (sorted)."""
        return self._by_agent.get(agent_id, ())

    def ports_on_host(self, host: str) -> int:
        """DHCP ports an agent on ``host`` owns (reserved leftovers of removed networks not)."""
        return self._ports_by_host.get(host, 0)

    def serving_agents(self, network_id: str) -> tuple[str, ...]:
        """The hosting agents that serve the network now: alive and enabled."""
        return tuple(
            a for a in self.agents_of_network(network_id) if usable(self.agents_by_id.get(a))
        )

    def find_agent(self, ref: str) -> Agent:
        """Resolve a DHCP agent given by id, host name or unique id prefix (4+ characters).

        An id (or unique prefix) of an agent of another type is refused by name:
        "agent X is not a DHCP agent (it is the L3 agent on HOST)".
        """
        return resolve_agent(
            self.agents,
            ref,
            kind="DHCP agent",
            listed="DHCP agents on",
            label=lambda a: a.id,
            before_prefix=lambda r: _refuse_other_type(self.other_agents, r),
        )


def usable(agent: Agent | None) -> bool:
    """Whether an agent serves DHCP now: alive and enabled."""
    return agent is not None and agent.usable


def _refuse_other_type(others: tuple[OtherAgent, ...], ref: str) -> None:
    matches = [o for o in others if o.id == ref or (len(ref) >= 4 and o.id.startswith(ref))]
    if len(matches) == 1:
        other = matches[0]
        raise NotFoundError(
            f"agent {ref!r} is not a DHCP agent (it is the {other.agent_type} on {other.host})"
        )


class DhcpMoveKind(StrEnum):
    """What one step of a DHCP plan does to a network's agents."""

    MOVE = "dhcp_move"  # add to target, wait for its port ACTIVE, then remove from source
    ADD = "dhcp_add"  # add one more copy on target (the network is below its count)
    REMOVE = "dhcp_remove"  # remove a copy the network does not need (repair --trim)


@dataclass(frozen=True, slots=True)
class DhcpMove:
    """One change to one network, with the reason an operator will read."""

    network_id: str
    kind: DhcpMoveKind
    target: str | None = None
    source: str | None = None
    reason: str = ""
    #: The source was planned as dead or disabled: skip the move if it is usable again.
    source_down: bool = False
    #: The network has a DHCP-enabled subnet, so a copy serves something: a copy is removed
    #: only while another live agent serves it. False: no agent ever gets a DHCP port for it.
    serves_dhcp: bool = True

    @property
    def object_id(self) -> str:
        return self.network_id


@dataclass(frozen=True, slots=True)
class DhcpUnplaceable:
    """A network the planner could not give a copy, and why."""

    network_id: str
    reason: str


@dataclass(frozen=True)
class DhcpPlan:
    """Ordered DHCP moves of one action, plus what could not be placed."""

    action: str
    moves: tuple[DhcpMove, ...] = ()
    unplaceable: tuple[DhcpUnplaceable, ...] = ()
    warnings: tuple[str, ...] = ()
