"""What the API's handler groups may use of it: the narrow interface of ``api.NeutronApi``. Pure.

``api_routers``, ``api_resources``, ``api_dhcp`` and ``api_subnets`` take an ``ApiCore``
instead of the whole ``NeutronApi``: the world, the simulation, the settings, the clock,
the public network and the lookups that answer Neutron's 404s. The API's one route table
(``api``) names their handlers; a group that uses another's lookups gets that one passed
in, so none of them imports ``api``.
"""

from __future__ import annotations

from typing import Protocol

from l3ha.emulator.http_types import Request
from l3ha.emulator.query import CollectionSpec
from l3ha.emulator.records import AgentRec, NetworkRec, RouterRec
from l3ha.emulator.sim import Simulation
from l3ha.emulator.sim_core import Core

#: Filters and sort keys of ``GET /v2.0/agents`` (L3 and DHCP agents, or OVN gateway agents).
AGENTS = CollectionSpec(
    "agents",
    frozenset({"id", "agent_type", "binary", "topic", "host", "admin_state_up", "alive",
               "availability_zone", "description"}),
    sort_keys=frozenset({"id", "host", "agent_type", "binary", "topic", "admin_state_up",
                         "description", "created_at", "started_at", "heartbeat_timestamp"}),
    unsortable=frozenset({"alive"}),
    bool_keys=frozenset({"admin_state_up", "alive"}),
)


class ApiCore(Core, Protocol):
    """The API as its handler groups see it (handlers run under ``world.lock``)."""

    @property
    def sim(self) -> Simulation: ...

    @property
    def public(self) -> NetworkRec:
        """The external network routers' gateways are on."""

    def agent(self, agent_id: str) -> AgentRec:
        """The agent, or a 404 ``ApiError`` naming it."""

    def router(self, router_id: str) -> RouterRec:
        """The router, or a 404 ``ApiError`` naming it."""

    def network(self, net_id: str) -> NetworkRec:
        """The network, or a 404 ``ApiError`` naming it."""

    def collection_url(self, req: Request) -> str:
        """The URL of the collection the request lists (for pagination links)."""
