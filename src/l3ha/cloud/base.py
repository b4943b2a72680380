"""What the rest of l3ha needs from a cloud, as a protocol. Pure (no SDK import).

``l3ha.cloud.adapter.NeutronCloud`` implements it over openstacksdk; the
executor and the commands depend only on this protocol, so tests can hand
them any implementation (in practice the adapter against the emulator).
Every method raises ``l3ha.errors.CloudError`` subclasses, never SDK errors,
and has retried what was worth retrying already: callers do not retry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from l3ha.model import Agent, Binding, Router, Snapshot


@dataclass(frozen=True, slots=True)
class PortState:
    """One port of a router: its id, owner, status and the host it is bound to."""

    id: str
    device_owner: str
    status: str
    host: str


class Cloud(Protocol):
    """Reads and writes l3ha performs on Neutron."""

    def list_agents(self) -> list[Agent]:
        """Every L3 agent."""

    def get_agent(self, agent_id: str) -> Agent:
        """One L3 agent, read fresh (``NotFoundError`` when it does not exist)."""

    def list_routers(self) -> list[Router]:
        """Every router."""

    def read_snapshot(self, with_ha_state: bool = False) -> Snapshot:
        """Agents, routers and bindings (per-agent calls made concurrently);
        ``with_ha_state`` adds each HA replica's ``ha_state``."""

    def routers_on_agent(self, agent_id: str) -> list[Binding]:
        """The bindings of the routers one agent hosts, read fresh."""

    def router_bindings(self, router_id: str) -> list[Binding]:
        """The agents hosting one router, read fresh, with ``ha_state``."""

    def bind(self, router_id: str, agent_id: str) -> list[Binding]:
        """Schedule the router to the agent; its bindings read back once afterwards.

        Raises on any refusal and ``ReadBackError`` when the binding is not there."""

    def unbind(self, router_id: str, agent_id: str) -> list[Binding]:
        """Remove the router from the agent (idempotent); its bindings read back once."""

    def set_admin_state(self, agent_id: str, up: bool) -> None:
        """Enable or disable an agent and read it back."""

    def set_description(self, agent_id: str, description: str) -> None:
        """Replace an agent's description (l3ha marks drained agents with it)."""

    def router_ports(self, router_id: str) -> list[PortState]:
        """The router's ports with status and binding host."""

    def ports_of_routers(self, router_ids: Sequence[str]) -> dict[str, list[PortState]]:
        """``router_ports`` of many routers, in as few calls as the API allows."""
