"""The Neutron v2.0 DHCP agent scheduler shims, network creation and DHCP port docs.

No I/O, but not pure: handlers read the emulator's clock (timestamps) and change the world
and the simulation (bindings, networks, DHCP ports). Part of the emulator's API (see
``api``); handlers run under ``world.lock``. Codes and
bodies follow neutron 29 (neutron/extensions/dhcpagentscheduler.py,
neutron/db/agentschedulers_db.py), checked by the contract suite against the real server:

- ``POST /v2.0/agents/{id}/dhcp-networks {"network_id": N}``: unknown network 404
  ``NetworkNotFound`` (checked first), unknown agent 404 ``AgentNotFound``, an agent
  that is not a DHCP agent or is disabled 404 ``InvalidDHCPAgent``, a network the agent
  already hosts 409 ``NetworkHostedByDHCPAgent``; else 201 with a JSON ``null`` body. A
  dead agent is accepted, and the binding may exceed ``dhcp_agents_per_network``. A body
  without ``network_id`` is a 500.
- ``DELETE /v2.0/agents/{id}/dhcp-networks/{network}``: unknown agent 404
  ``AgentNotFound``; a network it does not host (unknown networks too, and any network
  of a non-DHCP agent) 409 ``NetworkNotHostedByDhcpAgent``; else 204. The network's
  DHCP port of that agent is re-labelled ``reserved_dhcp_port``, not deleted.
- ``GET /v2.0/agents/{id}/dhcp-networks``: full network dicts (404 ``AgentNotFound``
  for an unknown agent; a non-DHCP agent has none); query parameters are ignored.
- ``GET /v2.0/networks/{id}/dhcp-agents``: full agent dicts plus ``resource_versions``
  and ``ha_chassis_priority``; an unknown network has none (200, not 404).
- ``GET``/``PUT`` of one ``dhcp-networks/{network}`` member: 500 (no such action).
- ``DELETE /v2.0/networks/{id}``: 409 ``NetworkInUse`` while router ports use it; its
  DHCP ports go with it (auto-deleted owners) and its bindings (cascade).
"""

from __future__ import annotations

from typing import Any

from l3ha.emulator import render
from l3ha.emulator.api_core import ApiCore
from l3ha.emulator.dhcp_world import OWNER_DHCP, DhcpPortRec
from l3ha.emulator.http_types import (
    Request,
    Response,
    as_bool,
    no_content,
    ok,
    resource_body,
)
from l3ha.emulator.query import ApiError, bad_request
from l3ha.emulator.records import DHCP_AGENT, AgentRec, NetworkRec

Doc = dict[str, Any]

NETWORK_CREATE_KEYS = frozenset(
    {
        "name",
        "description",
        "admin_state_up",
        "shared",
        "router:external",
        "mtu",
        "availability_zone_hints",
        "project_id",
        "tenant_id",
        "port_security_enabled",
        "provider:network_type",
        "provider:physical_network",
        "provider:segmentation_id",
        "is_default",
        "dns_domain",
        "qos_policy_id",
        "vlan_transparent",
    }
)


def internal_error() -> ApiError:
    return ApiError(
        500,
        "HTTPInternalServerError",
        "Request Failed: internal server error while processing your request.",
    )


def dhcp_port_doc(port: DhcpPortRec) -> Doc:
    """A DHCP port as ``GET /v2.0/ports`` shows it."""
    net = port.network
    fixed = [{"subnet_id": net.subnet_id, "ip_address": port.ip}] if net.subnet_id else []
    doc = render.any_port_doc(port.id, net, net.project_id, fixed, port.host)
    doc.update({"mac_address": port.mac, "status": port.status, "device_id": port.device_id,
                "device_owner": OWNER_DHCP, "created_at": render.iso_time(port.created_at),
                "updated_at": render.iso_time(port.updated_at), "revision_number": port.revision})
    return doc


class DhcpApi:
    """Handlers of the DHCP scheduler shims and ``POST /v2.0/networks``."""

    def __init__(self, api: ApiCore) -> None:
        self.api = api
        self.world = api.world
        self.sim = api.sim
        self.tables = api.world.dhcp

    # --- docs -------------------------------------------------------------------------

    def network_doc(self, net: NetworkRec) -> Doc:
        """A network; its availability zones are those of its DHCP agents (as Neutron's
        AZ-aware DHCP scheduler mixin reports them)."""
        zones = sorted({b.agent.az for b in self.tables.bindings_of(net.id).values()})
        return render.network_doc(net, zones)

    # --- the scheduler shims ------------------------------------------------------------

    def agent_networks(self, req: Request, agent_id: str) -> Response:
        bindings = self.tables.by_agent.get(agent_id)
        if not bindings:
            self.api.agent(agent_id)
        docs = [self.network_doc(b.network) for b in (bindings or {}).values()]
        return ok({"networks": docs})

    def add(self, req: Request, agent_id: str) -> Response:
        body = req.body if isinstance(req.body, dict) else {}
        if "network_id" not in body:
            raise internal_error()  # body['network_id']: a KeyError in the controller
        network = self.api.network(str(body["network_id"]))
        agent = self.api.agent(agent_id)
        if agent.agent_type != DHCP_AGENT or not agent.admin_state_up:
            raise invalid_dhcp_agent(agent)
        if agent.id in self.tables.bindings_of(network.id):
            raise ApiError(
                409,
                "NetworkHostedByDHCPAgent",
                f"The network {network.id} has been already hosted by the DHCP Agent {agent.id}.",
            )
        self.sim.dhcp.add(network, agent)
        return ok(None, 201)

    def remove(self, req: Request, agent_id: str, network_id: str) -> Response:
        agent = self.api.agent(agent_id)
        network = self.world.networks.get(network_id)
        if network is None or not self.sim.dhcp.remove(network, agent):
            raise ApiError(
                409,
                "NetworkNotHostedByDhcpAgent",
                f"The network {network_id} is not hosted by the DHCP Agent {agent.id}.",
            )
        return no_content()

    def no_action(self, req: Request, agent_id: str, network_id: str) -> Response:
        raise internal_error()

    def hosting_agents(self, req: Request, network_id: str) -> Response:
        """``GET /v2.0/networks/{id}/dhcp-agents``."""
        now = self.api.clock.wall()
        bindings = self.tables.bindings_of(network_id).values()
        return ok({"agents": [render.hosting_agent_doc(self.sim, b.agent, now) for b in bindings]})

    # --- agents and networks ------------------------------------------------------------

    def create_network(self, req: Request) -> Response:
        """``POST /v2.0/networks``: a network with no subnet yet (so not scheduled)."""
        body = resource_body(req.body, "network")
        unknown = sorted(set(body) - NETWORK_CREATE_KEYS)
        if unknown:
            raise bad_request(f"Unrecognized attribute(s) '{', '.join(unknown)}'")
        name = body.get("name", "")
        if not isinstance(name, str):
            raise bad_request(f"Invalid input for name. Reason: '{name}' is not a valid string.")
        external = as_bool(body.get("router:external", False), "router:external")
        as_bool(body.get("admin_state_up", True), "admin_state_up")
        hints = self._az_hints(body.get("availability_zone_hints") or [])
        net = self.world.add_network(name, "", external, self.api.clock.wall())
        net.subnet_id = ""
        net.az_hints = hints
        return ok({"network": self.network_doc(net)}, 201)

    def delete_network(self, req: Request, net_id: str) -> Response:
        """``DELETE /v2.0/networks/{id}``: refused while other ports use it; its DHCP
        ports are deleted with it and its agents told (``network_delete_end``)."""
        net = self.api.network(net_id)
        in_use = [p.id for p in self.world.ports.values() if p.network is net]
        if in_use:
            raise ApiError(
                409,
                "NetworkInUse",
                f"Unable to complete operation on network {net.id}. There are one or more "
                f"ports still in use on the network, id for these ports is: {','.join(in_use)}.",
            )
        for binding in list(self.tables.bindings_of(net.id).values()):
            self.sim.dhcp.remove(net, binding.agent)
        self.tables.forget_network(net)
        del self.world.networks[net.id]
        return no_content()

    def _az_hints(self, value: Any) -> list[str]:
        """Availability zone hints: a list of zones some agent is in (else 404)."""
        if not isinstance(value, list) or not all(isinstance(z, str) for z in value):
            raise bad_request(
                f"Invalid input for availability_zone_hints. Reason: '{value}' is not a list."
            )
        zones = {a.az for a in self.world.agents.values()}
        for zone in value:
            if zone not in zones:
                raise ApiError(
                    404, "AvailabilityZoneNotFound", f"AvailabilityZone {zone} could not be found."
                )
        return list(dict.fromkeys(value))


def invalid_dhcp_agent(agent: AgentRec) -> ApiError:
    return ApiError(
        404, "InvalidDHCPAgent", f"Agent {agent.id} is not a valid DHCP Agent or has been disabled."
    )
