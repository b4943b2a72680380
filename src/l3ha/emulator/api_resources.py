"""Neutron v2.0 routers, router tags, l3-agents, ports, networks, floating IPs, AZs. Pure.

Part of the emulator's API (see ``api``); handlers run under ``world.lock``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from l3ha.emulator import render
from l3ha.emulator.api_dhcp import dhcp_port_doc
from l3ha.emulator.dhcp_world import OWNER_DHCP, DhcpPortRec
from l3ha.emulator.http_types import (
    Request,
    Response,
    as_bool,
    no_content,
    not_found_path,
    ok,
    resource_body,
)
from l3ha.emulator.query import ApiError, CollectionSpec, bad_request, list_collection
from l3ha.emulator.world import (
    INTERFACE_OWNERS,
    OWNER_GATEWAY,
    OWNER_SNAT,
    PortRec,
    RouterRec,
)

if TYPE_CHECKING:
    from l3ha.emulator.api import NeutronApi

Doc = dict[str, Any]
TAG_MAX_LEN = 255

ROUTERS = CollectionSpec(
    "routers",
    # ha, distributed, status and flavor_id are not filterable in Neutron (400)
    frozenset({"id", "name", "description", "project_id", "tenant_id", "admin_state_up",
               "revision_number", "enable_ndp_proxy", "external_gateway_info"}),
    sort_keys=frozenset({"id", "name", "admin_state_up", "status", "tenant_id", "project_id",
                         "flavor_id"}),
    bool_keys=frozenset({"admin_state_up"}),
    tags=True,
)
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
    """Handlers for the resources besides agents."""

    def __init__(self, api: NeutronApi) -> None:
        self.api = api
        self.world = api.world
        self.sim = api.sim

    def route(self, parts: list[str], method: str) -> Callable[..., Response]:
        table: dict[tuple[str, int, str], Callable[..., Response]] = {
            ("routers", 1, "GET"): self._list_routers,
            ("routers", 1, "POST"): self._create_router,
            ("routers", 2, "GET"): self._show_router,
            ("routers", 2, "PUT"): self._update_router,
            ("routers", 2, "DELETE"): self._delete_router,
            ("ports", 1, "GET"): self._list_ports,
            ("ports", 2, "GET"): self._show_port,
            ("networks", 1, "GET"): self._list_networks,
            ("networks", 1, "POST"): self.api.dhcp.create_network,
            ("networks", 3, "GET"): self._network_sub_route,
            ("subnets", 1, "GET"): self.api.subnets.list,
            ("subnets", 1, "POST"): self.api.subnets.create,
            ("subnets", 2, "GET"): self.api.subnets.show,
            ("networks", 2, "GET"): self._show_network,
            ("networks", 2, "DELETE"): self.api.dhcp.delete_network,
            ("floatingips", 1, "GET"): self._list_fips,
            ("floatingips", 2, "GET"): self._show_fip,
            ("availability_zones", 1, "GET"): self._list_azs,
        }
        if len(parts) >= 3 and parts[0] == "routers":
            return self._router_sub_route(parts, method)
        handler = table.get((parts[0], len(parts), method))
        if handler is None:
            raise not_found_path()
        return handler

    def _router_sub_route(self, parts: list[str], method: str) -> Callable[..., Response]:
        table: dict[tuple[str, int, str], Callable[..., Response]] = {
            ("l3-agents", 3, "GET"): self._hosting_agents,
            ("tags", 3, "GET"): self._get_tags,
            ("tags", 3, "PUT"): self._replace_tags,
            ("tags", 3, "DELETE"): self._delete_tags,
            ("tags", 4, "GET"): self._check_tag,
            ("tags", 4, "PUT"): self._add_tag,
            ("tags", 4, "DELETE"): self._delete_tag,
        }
        handler = table.get((parts[2], len(parts), method))
        if handler is None:
            raise not_found_path()
        return handler

    # --- routers ------------------------------------------------------------------

    def _router_doc(self, router: RouterRec) -> Doc:
        return render.router_doc(router, self.api.public, render.router_azs(router))

    def _list_routers(self, req: Request) -> Response:
        return ok(list_collection(list(self.world.routers.values()), self._router_doc,
                                  lambda r: r.id, req.params, ROUTERS,
                                  self.api.collection_url(req),
                                  by_id=self.world.routers_by_id(),
                                  marker_exists=self._router_marker))

    def _router_marker(self, marker: str) -> bool:
        self.api.router(marker)
        return True

    def _show_router(self, req: Request, router_id: str) -> Response:
        return ok({"router": self._only(req, self._router_doc(self.api.router(router_id)))})

    def _only(self, req: Request, doc: Doc) -> Doc:
        fields = [v for k, v in req.params if k == "fields" and v]
        return {k: v for k, v in doc.items() if not fields or k in fields}

    def _create_router(self, req: Request) -> Response:
        body = resource_body(req.body, "router")
        allowed = {"name", "description", "admin_state_up", "ha", "distributed",
                   "availability_zone_hints", "external_gateway_info", "project_id",
                   "tenant_id", "flavor_id"}
        unknown = sorted(set(body) - allowed)
        if unknown:
            raise bad_request(f"Unrecognized attribute(s) '{', '.join(unknown)}'")
        now = self.api.clock.wall()
        router = self.world.add_router(str(body.get("name", "")), self.api.public, now)
        router.description = str(body.get("description") or "")
        router.admin_state_up = as_bool(body.get("admin_state_up", True), "admin_state_up")
        router.ha = as_bool(body.get("ha", False), "ha")
        router.distributed = as_bool(body.get("distributed", False), "distributed")
        router.az_hints = [str(z) for z in body.get("availability_zone_hints") or []]
        router.revision = 1
        router.reachable = False
        gateway = body.get("external_gateway_info")
        router.has_gateway = isinstance(gateway, dict) and bool(gateway.get("network_id"))
        if router.has_gateway:
            self.world.add_port(router, self.api.public, self.world.new_public_ip(),
                                OWNER_GATEWAY, now)
        if router.ha:
            self._schedule_new_ha(router)
        elif router.has_gateway:  # notify_router_updated schedules it
            self.sim.scheduler.router_updated(router)
        return ok({"router": self._router_doc(router)}, 201)

    def _update_router(self, req: Request, router_id: str) -> Response:
        router = self.api.router(router_id)
        changes = resource_body(req.body, "router")
        for key, value in changes.items():
            if key == "name":
                router.name = str(value)
            elif key == "description":
                router.description = str(value or "")
            elif key == "admin_state_up":
                router.admin_state_up = as_bool(value, key)
            elif key in ("ha", "distributed"):
                self._change_mode(router, key, as_bool(value, key), changes)
            else:
                raise bad_request(f"Cannot update read-only attribute {key}")
        self.world.touch(router, self.api.clock.wall())
        self.sim.scheduler.router_updated(router)  # notify_router_updated schedules it
        self.sim.refresh(router)
        return ok({"router": self._router_doc(router)})

    def _change_mode(self, router: RouterRec, key: str, value: bool, changes: Doc) -> None:
        if getattr(router, key) == value:
            return
        admin_up = changes.get("admin_state_up", router.admin_state_up) not in (False, "false")
        if admin_up and key == "ha":
            raise ApiError(400, "BadRequest", "Bad router request: Cannot change HA attribute "
                           "of active routers. Please set router admin_state_up to False prior "
                           "to upgrade.")
        if admin_up:
            raise ApiError(400, "BadRequest", "Bad router request: Cannot upgrade active router "
                           "to distributed. Please set router admin_state_up to False prior to "
                           "upgrade")
        setattr(router, key, value)

    def _schedule_new_ha(self, router: RouterRec) -> None:
        """Neutron schedules a new HA router at once onto the least loaded agents."""
        now = self.api.clock.wall()
        candidates = [a for a in self.world.l3_agents()
                      if a.mode in ("legacy", "dvr_snat") and a.admin_state_up
                      and self.sim.is_alive(a, now)]
        candidates.sort(key=lambda a: (len(a.routers), a.index))
        for agent in candidates[:self.api.cfg.max_l3_agents_per_router]:
            self.sim.bind(router, agent)

    def _delete_router(self, req: Request, router_id: str) -> Response:
        router = self.api.router(router_id)
        if any(p.owner in INTERFACE_OWNERS or p.owner == OWNER_SNAT for p in router.ports):
            raise ApiError(409, "RouterInUse", f"Router {router.id} still has ports")
        for replica in list(router.bindings.values()):
            self.sim.unbind(router, replica.agent)
        self.world.delete_router(router)
        router.reachable = False
        self.sim.on_reachability(router)
        return no_content()

    def _hosting_agents(self, req: Request, router_id: str, _sub: str) -> Response:
        router = self.api.router(router_id)
        now = self.api.clock.wall()
        states = render.reported_ha_states(self.sim, router, now) if router.ha else {}
        agents = [render.hosting_agent_doc(self.sim, router, r.agent, states.get(r.agent.id), now)
                  for r in router.bindings.values()]
        return ok({"agents": agents})

    # --- tags -------------------------------------------------------------------------

    def _get_tags(self, req: Request, router_id: str, _sub: str) -> Response:
        return ok({"tags": list(self.api.router(router_id).tags)})

    def _replace_tags(self, req: Request, router_id: str, _sub: str) -> Response:
        router = self.api.router(router_id)
        body = req.body
        if not isinstance(body, dict) or not isinstance(body.get("tags"), list):
            raise ApiError(400, "InvalidInput", "Invalid input for operation: Invalid tags body.")
        tags = body["tags"]
        for tag in tags:
            check_tag(tag)
        if len(set(tags)) != len(tags):
            raise ApiError(400, "InvalidInput",
                           f"Invalid input for operation: Duplicate items in the list: "
                           f"'{', '.join(sorted({t for t in tags if tags.count(t) > 1}))}'.")
        self.sim.retag(router, list(tags))
        return ok({"tags": list(router.tags)})

    def _delete_tags(self, req: Request, router_id: str, _sub: str) -> Response:
        self.sim.retag(self.api.router(router_id), [])
        return no_content()

    def _check_tag(self, req: Request, router_id: str, _sub: str, tag: str) -> Response:
        if tag not in self.api.router(router_id).tags:
            raise ApiError(404, "TagNotFound", f"Tag {tag} could not be found.")
        return no_content()

    def _add_tag(self, req: Request, router_id: str, _sub: str, tag: str) -> Response:
        router = self.api.router(router_id)
        check_tag(tag)
        if tag not in router.tags:
            self.sim.retag(router, [*router.tags, tag])
        return ok(None, 201)

    def _delete_tag(self, req: Request, router_id: str, _sub: str, tag: str) -> Response:
        router = self.api.router(router_id)
        if tag not in router.tags:
            raise ApiError(404, "TagNotFound", f"Tag {tag} could not be found.")
        self.sim.retag(router, [t for t in router.tags if t != tag])
        return no_content()

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

    def _list_ports(self, req: Request) -> Response:
        fixed = [v for k, v in req.params if k == "fixed_ips" and v]
        params = [(k, v) for k, v in req.params if k != "fixed_ips"]
        records = [p for p in self._port_records(req) if _fixed_ip_match(p, fixed)]
        return ok(list_collection(records, any_port_doc, lambda p: p.id, params, PORTS,
                                  self.api.collection_url(req),
                                  marker_exists=self._port_marker))

    def _port_marker(self, marker: str) -> bool:
        if marker not in self.world.ports and marker not in self.world.dhcp.ports:
            raise ApiError(404, "PortNotFound", f"Port {marker} could not be found.")
        return True

    def _show_port(self, req: Request, port_id: str) -> Response:
        port: PortRec | DhcpPortRec | None = (self.world.ports.get(port_id)
                                               or self.world.dhcp.ports.get(port_id))
        if port is None:
            raise ApiError(404, "PortNotFound", f"Port {port_id} could not be found.")
        return ok({"port": self._only(req, any_port_doc(port))})

    def _network_sub_route(self, req: Request, net_id: str, sub: str) -> Response:
        if sub != "dhcp-agents":
            raise not_found_path()
        return self.api.dhcp.hosting_agents(req, net_id, sub)

    def _list_networks(self, req: Request) -> Response:
        return ok(list_collection(list(self.world.networks.values()), self.api.dhcp.network_doc,
                                  lambda n: n.id, req.params, NETWORKS,
                                  self.api.collection_url(req),
                                  marker_exists=self._network_marker))

    def _network_marker(self, marker: str) -> bool:
        if marker not in self.world.networks:
            raise ApiError(404, "NetworkNotFound", f"Network {marker} could not be found.")
        return True

    def _show_network(self, req: Request, net_id: str) -> Response:
        net = self.world.networks.get(net_id)
        if net is None:
            raise ApiError(404, "NetworkNotFound", f"Network {net_id} could not be found.")
        return ok({"network": self._only(req, self.api.dhcp.network_doc(net))})

    def _list_fips(self, req: Request) -> Response:
        public = self.api.public
        return ok(list_collection(list(self.world.fips.values()),
                                  lambda f: render.fip_doc(f, public), lambda f: f.id,
                                  req.params, FLOATINGIPS, self.api.collection_url(req)))

    def _show_fip(self, req: Request, fip_id: str) -> Response:
        fip = self.world.fips.get(fip_id)
        if fip is None:
            raise ApiError(404, "FloatingIPNotFound", f"Floating IP {fip_id} could not be found")
        return ok({"floatingip": self._only(req, render.fip_doc(fip, self.api.public))})

    def _list_azs(self, req: Request) -> Response:
        zones = sorted({a.az for a in self.world.agents.values()})
        docs = [{"name": z, "resource": res, "state": "available"}
                for z in zones for res in ("router", "network")]
        params = [(k, v) for k, v in req.params if k != "fields"]  # Neutron ignores fields here
        return ok(list_collection(docs, lambda d: d, lambda d: str(d["name"]), params,
                                  AVAILABILITY_ZONES, self.api.collection_url(req)))


def check_tag(tag: Any) -> None:
    if not isinstance(tag, str) or not tag or len(tag) > TAG_MAX_LEN:
        raise ApiError(400, "InvalidInput", f"Invalid input for operation: '{tag}' is not a "
                       "valid tag.")


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
