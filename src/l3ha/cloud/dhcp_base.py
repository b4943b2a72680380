"""What the DHCP side of l3ha needs from a cloud, as a protocol. Pure (no SDK import).

``l3ha.cloud.dhcp.NeutronDhcp`` implements it over the openstacksdk adapter's
network proxy; the DHCP executor and operations depend only on this
protocol. Every method raises ``l3ha.errors.CloudError`` subclasses.
"""

from __future__ import annotations

from typing import Protocol

from l3ha.dhcp_model import DhcpPort, DhcpSnapshot
from l3ha.model import Agent


class DhcpCloud(Protocol):
    """Reads and writes l3ha performs on Neutron's DHCP agent scheduler."""

    def read_dhcp_snapshot(self) -> DhcpSnapshot:
        """DHCP agents, networks, network <-> agent bindings and DHCP ports."""

    def list_dhcp_agents(self) -> list[Agent]:
        """Every DHCP agent (server's alive flag)."""

    def dhcp_agents_of_network(self, network_id: str) -> list[Agent]:
        """The DHCP agents hosting one network, read fresh (``NotFoundError``: no network)."""

    def dhcp_ports(self, network_id: str) -> list[DhcpPort]:
        """The network's DHCP ports (``device_owner`` ``network:dhcp``), read fresh."""

    def dhcp_ports_of_networks(self, network_ids: list[str]) -> list[DhcpPort]:
        """The DHCP ports of several networks at once (few requests), read fresh."""

    def add_network_to_agent(self, network_id: str, agent_id: str) -> None:
        """Schedule the network to the DHCP agent and read it back; raises on any refusal."""

    def remove_network_from_agent(self, network_id: str, agent_id: str) -> None:
        """Remove the network from the DHCP agent and read it back (idempotent)."""

    def set_dhcp_agent_state(
        self, agent_id: str, admin_state_up: bool | None, description: str | None
    ) -> None:
        """Change a DHCP agent's admin state and/or description and read it back."""
