"""Neutron v2.0 subnets over the emulated networks: list, show, create.

No I/O, but not pure: handlers read the emulator's clock and change the world.

Part of the emulator's API (see ``api``); handlers run under ``world.lock``. The emulator
gives a network at most one IPv4 /24 subnet: the public, HA and routers' private networks
have one with ``enable_dhcp`` false, the tenant networks (``--networks``) one with
``enable_dhcp`` true, and a network created through the API none until
``POST /v2.0/subnets``. Creating a DHCP-enabled subnet has the agents already hosting the
network set it up again (now with a DHCP port) and schedules the network to DHCP agents at
once, as Neutron's DHCP notifier does on ``subnet_create_end``
(neutron/api/rpc/agentnotifiers/dhcp_rpc_agent_api.py).
"""

from __future__ import annotations

from typing import Any

from l3ha.emulator import render
from l3ha.emulator.api_core import ApiCore
from l3ha.emulator.http_types import (
    Request,
    Response,
    as_bool,
    ok,
    only_fields,
    resource_body,
)
from l3ha.emulator.query import CollectionSpec, bad_request, found, list_collection
from l3ha.emulator.records import NetworkRec

Doc = dict[str, Any]

SUBNETS = CollectionSpec(
    "subnets",
    frozenset(
        {
            "id",
            "name",
            "network_id",
            "tenant_id",
            "project_id",
            "cidr",
            "ip_version",
            "enable_dhcp",
            "gateway_ip",
            "description",
            "revision_number",
        }
    ),
    sort_keys=frozenset(
        {"id", "name", "network_id", "tenant_id", "project_id", "cidr", "ip_version", "enable_dhcp"}
    ),
    bool_keys=frozenset({"enable_dhcp"}),
    tags=True,
)
SUBNET_CREATE_KEYS = frozenset(
    {
        "name",
        "network_id",
        "cidr",
        "ip_version",
        "enable_dhcp",
        "gateway_ip",
        "description",
        "project_id",
        "tenant_id",
        "dns_nameservers",
        "allocation_pools",
        "host_routes",
    }
)


class SubnetApi:
    """Handlers of ``/v2.0/subnets``."""

    def __init__(self, api: ApiCore) -> None:
        self.api = api
        self.world = api.world
        self.tables = api.world.dhcp
        self.names: dict[str, str] = {}  # network id -> name of a subnet made through the API

    def _networks(self) -> list[NetworkRec]:
        return [n for n in self.world.networks.values() if n.subnet_id]

    def doc(self, net: NetworkRec) -> Doc:
        base = net.cidr_base
        project = "" if net.name.startswith("HA network") else net.project_id
        return {
            "id": net.subnet_id,
            "name": self.names.get(net.id, f"{net.name}-subnet"),
            "network_id": net.id,
            "tenant_id": project,
            "project_id": project,
            "ip_version": 4,
            "cidr": f"{base}.0/24",
            "gateway_ip": f"{base}.1",
            "allocation_pools": [{"start": f"{base}.2", "end": f"{base}.254"}],
            "enable_dhcp": net.id in self.tables.tenant_networks,
            "dns_nameservers": [],
            "host_routes": [],
            "ipv6_ra_mode": None,
            "ipv6_address_mode": None,
            "subnetpool_id": None,
            "service_types": [],
            "segment_id": None,
            "description": "",
            "tags": [],
            "created_at": render.iso_time(net.created_at),
            "updated_at": render.iso_time(net.created_at),
            "revision_number": 0,
        }

    def list(self, req: Request) -> Response:
        return ok(
            list_collection(
                self._networks(),
                self.doc,
                lambda n: n.subnet_id,
                req.params,
                SUBNETS,
                self.api.collection_url(req),
                marker_lookup=self._network_of,
            )
        )

    def _network_of(self, subnet_id: str) -> NetworkRec:
        net = next((n for n in self._networks() if n.subnet_id == subnet_id), None)
        return found(net, "SubnetNotFound", f"Subnet {subnet_id} could not be found.")

    def show(self, req: Request, subnet_id: str) -> Response:
        return ok({"subnet": only_fields(req, self.doc(self._network_of(subnet_id)))})

    def create(self, req: Request) -> Response:
        body = resource_body(req.body, "subnet")
        unknown = sorted(set(body) - SUBNET_CREATE_KEYS)
        if unknown:
            raise bad_request(f"Unrecognized attribute(s) '{', '.join(unknown)}'")
        for key in ("network_id", "cidr"):
            if key not in body:
                raise bad_request(
                    f"Failed to parse request. Required attribute '{key}' not specified"
                )
        net = self.api.network(str(body["network_id"]))
        base = _cidr_base(str(body["cidr"]))
        if net.subnet_id:
            raise bad_request(
                f"The emulator models one subnet per network; network {net.id} has one"
            )
        net.subnet_id = self.world.new_id()
        net.cidr_base = base
        self.names[net.id] = str(body.get("name") or "")
        if as_bool(body.get("enable_dhcp", True), "enable_dhcp"):
            self.tables.add_dhcp_network(net)
            self.api.sim.dhcp.subnet_created(net)  # subnet_create_end
        return ok({"subnet": self.doc(net)}, 201)


def _cidr_base(cidr: str) -> str:
    """``A.B.C.0/24`` -> ``A.B.C`` (the emulator's subnets are IPv4 /24s)."""
    address, _, prefix = cidr.partition("/")
    octets = address.split(".")
    if prefix != "24" or len(octets) != 4 or not all(o.isdigit() and int(o) < 256 for o in octets):
        raise bad_request(
            f"Invalid input for cidr. Reason: the emulator takes an IPv4 /24, not '{cidr}'."
        )
    return ".".join(octets[:3])
