"""Neutron v2.0 ports, networks, floating IPs and availability zones.

No I/O, but not pure: handlers read the emulator's clock and change the world.

Part of the emulator's API (see ``api``); handlers run under ``world.lock``. Routers
live in ``api_routers``, subnets in ``api_subnets``, network creation and deletion and
the DHCP scheduler shims in ``api_dhcp``.
"""

from __future__ import annotations

from typing import Any

from l3ha.emulator import render
from l3ha.emulator.api_core import ApiCore
from l3ha.emulator.api_dhcp import DhcpApi, dhcp_port_doc
from l3ha.emulator.dhcp_world import OWNER_DHCP, DhcpPortRec
from l3ha.emulator.http_types import Request, Response, ok, only_fields
from l3ha.emulator.query import ApiError, CollectionSpec, found, list_collection
from l3ha.emulator.records import PortRec

Doc = dict[str, Any]

PORTS = CollectionSpec(
    "ports",
    frozenset({"id", "name", "network_id", "tenant_id", "project_id", "mac_address",
               "admin_state_up", "status", "device_id", "device_owner", "fixed_ips",
               "binding:host_id", "binding:vnic_type", "description", "revision_number",
               "security_groups", "ip_allocation"}),
    sort_keys=frozenset({"id", "name", "network_id", "tenant_id", "project_id", "mac_address",
                         "admin_state_up", "status", "device_id", "device_owner"}),
    bool_keys=frozenset({"admin_state_up"}),
    tags=True,
)
NETWORKS = CollectionSpec(
    "networks",
    frozenset({"id", "name", "tenant_id", "project_id", "admin_state_up", "status", "shared",
               "router:external", "mtu", "description", "revision_number", "is_default"}),
    sort_keys=frozenset({"id", "name", "tenant_id", "project_id", "admin_state_up", "status",
                         "mtu"}),
    bool_keys=frozenset({"admin_state_up", "shared", "router:external", "is_default"}),
    tags=True,
)
FLOATINGIPS = CollectionSpec(
    "floatingips",
    frozenset({"id", "floating_ip_address", "floating_network_id", "router_id", "port_id",
               "fixed_ip_address", "status", "tenant_id", "project_id", "description",
               "revision_number"}),
    sort_keys=frozenset({"id", "floating_ip_address", "floating_network_id", "router_id",
                         "port_id", "fixed_ip_address", "status", "tenant_id", "project_id"}),
    tags=True,
)
AVAILABILITY_ZONES = CollectionSpec(
    "availability_zones", frozenset({"name", "resource", "state"}))


class ResourceApi:
    """Handlers for ports, networks, floating IPs and availability zones (network writes
    are ``api_dhcp``'s)."""

    def __init__(self, api: ApiCore, dhcp: DhcpApi) -> None:
        self.api = api
        self.dhcp = dhcp
        self.world = api.world
        self.sim = api.sim

    # --- ports, networks, floating IPs, AZs -----------------------------------------------

    def _port_records(self, req: Request) -> list[PortRec | DhcpPortRec]:
        """The ports a list could match (its filters still apply): by device id, else
        DHCP ports by network when only those are asked for, else every port."""
        device_ids = [v for k, v in req.params if k == "device_id" and v]
        owners = {v for k, v in req.params if k == "device_owner" and v}
        networks = [v for k, v in req.params if k == "network_id" and v]
        if not device_ids and owners == {OWNER_DHCP} and networks:
            by_network = self.world.dhcp.ports_by_network
            return [p for n in dict.fromkeys(networks) for p in by_network.get(n, [])]
        if not device_ids:
            return [*self.world.ports.values(), *self.world.dhcp.ports.values()]
        records: list[PortRec | DhcpPortRec] = []
        for device_id in dict.fromkeys(device_ids):
            router = self.world.routers.get(device_id)
            if router is not None:
                records.extend(router.ports)
                records.extend(r.ha_port for r in router.bindings.values() if r.ha_port)
        wanted = set(device_ids)
        records.extend(p for p in self.world.dhcp.ports.values() if p.device_id in wanted)
        return records

    def list_ports(self, req: Request) -> Response:
        fixed = [v for k, v in req.params if k == "fixed_ips" and v]
        params = [(k, v) for k, v in req.params if k != "fixed_ips"]
        records = [p for p in self._port_records(req) if _fixed_ip_match(p, fixed)]
        return ok(list_collection(records, any_port_doc, lambda p: p.id, params, PORTS,
                                  self.api.collection_url(req),
                                  marker_lookup=self._port))

    def _port(self, port_id: str) -> PortRec | DhcpPortRec:
        port: PortRec | DhcpPortRec | None = (self.world.ports.get(port_id)
                                               or self.world.dhcp.ports.get(port_id))
        if port is None:
            raise ApiError(404, "PortNotFound", f"Port {port_id} could not be found.")
        return port

    def show_port(self, req: Request, port_id: str) -> Response:
        return ok({"port": only_fields(req, any_port_doc(self._port(port_id)))})

    def list_networks(self, req: Request) -> Response:
        return ok(list_collection(list(self.world.networks.values()), self.dhcp.network_doc,
                                  lambda n: n.id, req.params, NETWORKS,
                                  self.api.collection_url(req),
                                  marker_lookup=self.api.network))

    def show_network(self, req: Request, net_id: str) -> Response:
        return ok({"network": only_fields(req, self.dhcp.network_doc(self.api.network(net_id)))})

    def list_fips(self, req: Request) -> Response:
        public = self.api.public
        return ok(list_collection(list(self.world.fips.values()),
                                  lambda f: render.fip_doc(f, public), lambda f: f.id,
                                  req.params, FLOATINGIPS, self.api.collection_url(req)))

    def show_fip(self, req: Request, fip_id: str) -> Response:
        fip = found(self.world.fips.get(fip_id), "FloatingIPNotFound",
                    f"Floating IP {fip_id} could not be found")
        return ok({"floatingip": only_fields(req, render.fip_doc(fip, self.api.public))})

    def list_azs(self, req: Request) -> Response:
        zones = sorted({a.az for a in self.world.agents.values()})
        docs = [{"name": z, "resource": res, "state": "available"}
                for z in zones for res in ("router", "network")]
        params = [(k, v) for k, v in req.params if k != "fields"]  # Neutron ignores fields here
        return ok(list_collection(docs, lambda d: d, lambda d: str(d["name"]), params,
                                  AVAILABILITY_ZONES, self.api.collection_url(req)))


def any_port_doc(port: PortRec | DhcpPortRec) -> Doc:
    return dhcp_port_doc(port) if isinstance(port, DhcpPortRec) else render.port_doc(port)


def _fixed_ip_match(port: PortRec | DhcpPortRec, filters: list[str]) -> bool:
    for item in filters:
        key, _, value = item.partition("=")
        if key == "ip_address" and port.ip != value:
            return False
        if key == "subnet_id" and port.network.subnet_id != value:
            return False
    return True
