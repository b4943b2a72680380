"""Neutron v2.0 routers, their tags and their l3-agents.

No I/O, but not pure: handlers read the emulator's clock and change the world.

Part of the emulator's API (see ``api``); handlers run under ``world.lock``. A new HA
router is scheduled at once onto the least loaded live agents; an update (and a create
with a gateway) schedules an unhosted router (``sim_schedule``); retagging goes through
the simulation, since tags set a router's busy weight.
"""

from __future__ import annotations

from typing import Any

from l3ha.emulator import render
from l3ha.emulator.api_core import ApiCore
from l3ha.emulator.http_types import (
    Request,
    Response,
    as_bool,
    no_content,
    ok,
    only_fields,
    resource_body,
)
from l3ha.emulator.query import ApiError, CollectionSpec, bad_request, list_collection
from l3ha.emulator.records import INTERFACE_OWNERS, OWNER_GATEWAY, OWNER_SNAT, RouterRec

Doc = dict[str, Any]
TAG_MAX_LEN = 255

ROUTERS = CollectionSpec(
    "routers",
    # ha, distributed, status and flavor_id are not filterable in Neutron (400)
    frozenset(
        {
            "id",
            "name",
            "description",
            "project_id",
            "tenant_id",
            "admin_state_up",
            "revision_number",
            "enable_ndp_proxy",
            "external_gateway_info",
        }
    ),
    sort_keys=frozenset(
        {"id", "name", "admin_state_up", "status", "tenant_id", "project_id", "flavor_id"}
    ),
    bool_keys=frozenset({"admin_state_up"}),
    tags=True,
)


class RouterApi:
    """Handlers for ``/v2.0/routers`` and its ``l3-agents`` and ``tags`` sub-resources."""

    def __init__(self, api: ApiCore) -> None:
        self.api = api
        self.world = api.world
        self.sim = api.sim

    # --- routers ------------------------------------------------------------------

    def _router_doc(self, router: RouterRec) -> Doc:
        return render.router_doc(router, self.api.public, render.router_azs(router))

    def list_routers(self, req: Request) -> Response:
        return ok(
            list_collection(
                list(self.world.routers.values()),
                self._router_doc,
                lambda r: r.id,
                req.params,
                ROUTERS,
                self.api.collection_url(req),
                by_id=self.world.routers_by_id(),
                marker_lookup=self.api.router,
            )
        )

    def show_router(self, req: Request, router_id: str) -> Response:
        return ok({"router": only_fields(req, self._router_doc(self.api.router(router_id)))})

    def create_router(self, req: Request) -> Response:
        body = resource_body(req.body, "router")
        allowed = {
            "name",
            "description",
            "admin_state_up",
            "ha",
            "distributed",
            "availability_zone_hints",
            "external_gateway_info",
            "project_id",
            "tenant_id",
            "flavor_id",
        }
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
            self.world.add_port(
                router, self.api.public, self.world.new_public_ip(), OWNER_GATEWAY, now
            )
        if router.ha:
            self._schedule_new_ha(router)
        elif router.has_gateway:  # notify_router_updated schedules it
            self.sim.scheduler.router_updated(router)
        return ok({"router": self._router_doc(router)}, 201)

    def update_router(self, req: Request, router_id: str) -> Response:
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
        if admin_up:
            change = ("change HA attribute of active routers" if key == "ha"
                      else "upgrade active router to distributed")
            end = "." if key == "ha" else ""
            raise ApiError(400, "BadRequest", f"Bad router request: Cannot {change}. Please set "
                           f"router admin_state_up to False prior to upgrade{end}")
        setattr(router, key, value)

    def _schedule_new_ha(self, router: RouterRec) -> None:
        """Neutron schedules a new HA router at once onto the least loaded agents."""
        candidates = self.sim.scheduler.least_loaded(lambda a: a.mode in ("legacy", "dvr_snat"))
        for agent in candidates[: self.api.cfg.max_l3_agents_per_router]:
            self.sim.bind(router, agent)

    def delete_router(self, req: Request, router_id: str) -> Response:
        router = self.api.router(router_id)
        if any(p.owner in INTERFACE_OWNERS or p.owner == OWNER_SNAT for p in router.ports):
            raise ApiError(409, "RouterInUse", f"Router {router.id} still has ports")
        for replica in list(router.bindings.values()):
            self.sim.unbind(router, replica.agent)
        self.world.delete_router(router)
        router.reachable = False
        self.sim.on_reachability(router)
        return no_content()

    def l3_agents(self, req: Request, router_id: str) -> Response:
        router = self.api.router(router_id)
        now = self.api.clock.wall()
        states = render.reported_ha_states(self.sim, router, now) if router.ha else {}
        agents = [
            render.hosting_agent_doc(self.sim, r.agent, now, ha_state=states.get(r.agent.id))
            for r in router.bindings.values()
        ]
        return ok({"agents": agents})

    # --- tags -------------------------------------------------------------------------

    def get_tags(self, req: Request, router_id: str) -> Response:
        return ok({"tags": list(self.api.router(router_id).tags)})

    def replace_tags(self, req: Request, router_id: str) -> Response:
        router = self.api.router(router_id)
        body = req.body
        if not isinstance(body, dict) or not isinstance(body.get("tags"), list):
            raise ApiError(400, "InvalidInput", "Invalid input for operation: Invalid tags body.")
        tags = body["tags"]
        for tag in tags:
            check_tag(tag)
        if len(set(tags)) != len(tags):
            raise ApiError(
                400,
                "InvalidInput",
                f"Invalid input for operation: Duplicate items in the list: "
                f"'{', '.join(sorted({t for t in tags if tags.count(t) > 1}))}'.",
            )
        self.sim.retag(router, list(tags))
        return ok({"tags": list(router.tags)})

    def delete_tags(self, req: Request, router_id: str) -> Response:
        self.sim.retag(self.api.router(router_id), [])
        return no_content()

    def show_tag(self, req: Request, router_id: str, tag: str) -> Response:
        if tag not in self.api.router(router_id).tags:
            raise ApiError(404, "TagNotFound", f"Tag {tag} could not be found.")
        return no_content()

    def add_tag(self, req: Request, router_id: str, tag: str) -> Response:
        router = self.api.router(router_id)
        check_tag(tag)
        if tag not in router.tags:
            self.sim.retag(router, [*router.tags, tag])
        return ok(None, 201)

    def delete_tag(self, req: Request, router_id: str, tag: str) -> Response:
        router = self.api.router(router_id)
        if tag not in router.tags:
            raise ApiError(404, "TagNotFound", f"Tag {tag} could not be found.")
        self.sim.retag(router, [t for t in router.tags if t != tag])
        return no_content()


def check_tag(tag: Any) -> None:
    if not isinstance(tag, str) or not tag or len(tag) > TAG_MAX_LEN:
        raise ApiError(
            400, "InvalidInput", f"Invalid input for operation: '{tag}' is not a valid tag."
        )
