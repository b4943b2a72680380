"""The Neutron v2.0 API over the emulated world: discovery, agents, scheduler shims.

No I/O, but not pure: its handlers read the emulator's clock and change the world.

Requests arrive as ``Request`` values and leave as ``Response`` values; the
HTTP server does the I/O. One route table (``NeutronApi._routes``) maps method and path
to the handler; routers live in ``api_routers``; ports, networks, floating IPs and
availability zones in ``api_resources``. Every error is an ``ApiError`` rendered as a
``NeutronError`` body. Handlers run under ``world.lock``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from l3ha.emulator import render
from l3ha.emulator.api_core import AGENTS
from l3ha.emulator.api_dhcp import DhcpApi
from l3ha.emulator.api_ovn import OvnApi
from l3ha.emulator.api_resources import ResourceApi
from l3ha.emulator.api_routers import RouterApi
from l3ha.emulator.api_subnets import SubnetApi
from l3ha.emulator.config import EmulatorConfig
from l3ha.emulator.http_types import (
    Request,
    Response,
    Route,
    Routes,
    as_bool,
    no_content,
    not_found_path,
    ok,
    only_fields,
    resource_body,
    router_id_of,
)
from l3ha.emulator.query import ApiError, bad_request, found, list_collection
from l3ha.emulator.records import AgentRec, NetworkRec, RouterRec
from l3ha.emulator.sim import Simulation
from l3ha.emulator.world import World

if TYPE_CHECKING:  # the protocol only: time comes from the clock a caller injects
    from l3ha.clock import Clock

Doc = dict[str, Any]

EXTENSIONS = [
    ("agent", "agent", "The agent management extension."),
    ("l3_agent_scheduler", "L3 Agent Scheduler", "Schedule routers among l3 agents"),
    ("dhcp_agent_scheduler", "DHCP Agent Scheduler", "Schedule networks among dhcp agents"),
    ("router", "Neutron L3 Router", "Router abstraction for basic L3 forwarding"),
    ("ext-gw-mode", "Neutron L3 Configurable external gateway mode", "Extension of the router"),
    ("l3-ha", "HA Router extension", "Adds HA capability to routers."),
    ("dvr", "Distributed Virtual Router", "Enables configuration of Distributed Virtual Routers."),
    ("availability_zone", "Availability Zone", "The availability zone extension."),
    ("router_availability_zone", "Router Availability Zone", "Availability zone for routers."),
    ("network_availability_zone", "Network Availability Zone", "Availability zone for networks."),
    ("standard-attr-tag", "Tag support for resources with standard attribute",
     "Enables to set tag on resources with standard attribute."),
    ("standard-attr-timestamp", "Resource timestamps", "Adds created_at and updated_at fields."),
    ("standard-attr-revisions", "Resource revision numbers", "Adds revision_number."),
    ("standard-attr-description", "standard-attr-description", "Extension to add descriptions."),
    ("binding", "Port Binding", "Expose port bindings of a virtual port to external application"),
    ("external-net", "Neutron external network", "Adds external network attribute."),
    ("extraroute", "Neutron Extra Route", "Extra routes configuration for L3 router"),
    ("project-id", "project_id field enabled", "Extension that indicates project_id is enabled."),
    ("pagination", "Pagination support", "Extension that indicates that pagination is enabled."),
    ("sorting", "Sorting support", "Extension that indicates that sorting is enabled."),
    ("filter-validation", "Filter parameters validation", "Validate filter parameters."),
    ("l3-flavors", "Router Flavor Extension", "Flavor support for routers."),
    ("fip-port-details", "Floating IP Port Details Extension", "Add port_details attribute."),
]
EXTENSION_UPDATED = "2017-01-01T00:00:00-00:00"
EXTENSION_UPDATED_BY_ALIAS = {"l3_agent_scheduler": "2013-02-07T10:00:00-00:00",
                              "dhcp_agent_scheduler": "2013-02-07T10:00:00-00:00"}
DESCRIPTION_MAX = 255
RESOURCES = ["networks", "subnets", "ports", "routers", "floatingips", "agents",
             "availability_zones", "extensions"]


class NeutronApi:
    """Dispatches Neutron requests to handlers."""

    def __init__(self, world: World, sim: Simulation, cfg: EmulatorConfig, clock: Clock,
                 public: NetworkRec) -> None:
        self.world = world
        self.sim = sim
        self.cfg = cfg
        self.clock = clock
        self.public = public
        self.routers = RouterApi(self)
        self.dhcp = DhcpApi(self)
        self.subnets = SubnetApi(self)
        self.resources = ResourceApi(self, self.dhcp)
        self.routes = Routes(self._routes(None))

    # --- entry ----------------------------------------------------------------

    def handle(self, req: Request) -> Response:
        try:
            with self.world.lock:
                return self._dispatch(req)
        except ApiError as err:
            return Response(err.status, err.body())

    def _dispatch(self, req: Request) -> Response:
        path = req.path
        if path == "/":
            return self._versions(req)
        if path == "/v2.0":
            raise not_found_path()
        if not path.startswith("/v2.0/"):
            raise ApiError(404, "HTTPNotFound", "", raw={"code": 404, "title": "Not Found",
                                                         "description": None})
        parts = [p for p in path[len("/v2.0/"):].split("/") if p]
        if parts and parts[-1].endswith(".json"):
            parts[-1] = parts[-1][: -len(".json")]
        if not parts:
            return self._resource_index(req)
        handler, values = self.routes.match(req.method, parts)
        return handler(req, *values)

    def _routes(self, ovn: OvnApi | None) -> list[Route]:
        """The route table of the whole API. In ML2/OVN mode the agents are gateway chassis:
        ``ovn`` serves the agent and L3 scheduler rows, and the rows it has no counterpart
        for are left out (404)."""
        routers, dhcp, subnets, other = self.routers, self.dhcp, self.subnets, self.resources
        return [
            ("GET", "extensions", self._extensions),
            ("GET", "extensions/{alias}", self._extension),
            ("GET", "agents", ovn.list_agents if ovn else self._list_agents),
            ("POST", "agents", None if ovn else self._create_agent),
            ("GET", "agents/{id}", ovn.show_agent if ovn else self._show_agent),
            ("PUT", "agents/{id}", ovn.update_agent if ovn else self._update_agent),
            ("DELETE", "agents/{id}", None if ovn else self._delete_agent),
            ("GET", "agents/{id}/l3-routers", ovn.agent_routers if ovn else self._agent_routers),
            ("POST", "agents/{id}/l3-routers", ovn.add if ovn else self._bind),
            ("DELETE", "agents/{id}/l3-routers/{router}", ovn.remove if ovn else self._unbind),
            ("PUT", "agents/{id}/l3-routers/{router}", ovn.change if ovn else self._update_binding),
            ("GET", "agents/{id}/dhcp-networks", None if ovn else dhcp.agent_networks),
            ("POST", "agents/{id}/dhcp-networks", None if ovn else dhcp.add),
            ("DELETE", "agents/{id}/dhcp-networks/{network}", None if ovn else dhcp.remove),
            ("GET", "agents/{id}/dhcp-networks/{network}", None if ovn else dhcp.no_action),
            ("PUT", "agents/{id}/dhcp-networks/{network}", None if ovn else dhcp.no_action),
            ("GET", "routers", routers.list_routers),
            ("POST", "routers", routers.create_router),
            ("GET", "routers/{id}", routers.show_router),
            ("PUT", "routers/{id}", routers.update_router),
            ("DELETE", "routers/{id}", routers.delete_router),
            ("GET", "routers/{id}/l3-agents", ovn.router_agents if ovn else routers.l3_agents),
            ("GET", "routers/{id}/tags", routers.get_tags),
            ("PUT", "routers/{id}/tags", routers.replace_tags),
            ("DELETE", "routers/{id}/tags", routers.delete_tags),
            ("GET", "routers/{id}/tags/{tag}", routers.show_tag),
            ("PUT", "routers/{id}/tags/{tag}", routers.add_tag),
            ("DELETE", "routers/{id}/tags/{tag}", routers.delete_tag),
            ("GET", "networks", other.list_networks),
            ("POST", "networks", dhcp.create_network),
            ("GET", "networks/{id}", other.show_network),
            ("DELETE", "networks/{id}", dhcp.delete_network),
            ("GET", "networks/{id}/dhcp-agents", dhcp.hosting_agents),
            ("GET", "subnets", subnets.list),
            ("POST", "subnets", subnets.create),
            ("GET", "subnets/{id}", subnets.show),
            ("GET", "ports", other.list_ports),
            ("GET", "ports/{id}", other.show_port),
            ("GET", "floatingips", other.list_fips),
            ("GET", "floatingips/{id}", other.show_fip),
            ("GET", "availability_zones", other.list_azs),
        ]

    def serve_ovn(self, ovn: OvnApi) -> None:
        """ML2/OVN mode: the agent rows of the route table are ``ovn``'s."""
        self.routes = Routes(self._routes(ovn))

    # --- discovery --------------------------------------------------------------

    def _versions(self, req: Request) -> Response:
        if req.method != "GET":
            raise ApiError(405, "HTTPMethodNotAllowed", "", raw={
                "code": 405, "title": "Method Not Allowed", "description": ""})
        link = {"rel": "self", "href": f"{req.base}/v2.0/"}
        return ok({"versions": [{"id": "v2.0", "status": "CURRENT", "links": [link]}]})

    def _resource_index(self, req: Request) -> Response:
        return ok({"resources": [
            {"name": name[:-1] if name != "availability_zones" else "availability_zone",
             "collection": name,
             "links": [{"rel": "self", "href": f"{req.base}/v2.0/{name}"}]}
            for name in RESOURCES]})

    def _extension_doc(self, alias: str, name: str, description: str) -> Doc:
        updated = EXTENSION_UPDATED_BY_ALIAS.get(alias, EXTENSION_UPDATED)
        return {"alias": alias, "name": name, "description": description,
                "updated": updated, "links": []}

    def _extensions(self, req: Request) -> Response:
        return ok({"extensions": [self._extension_doc(*e) for e in EXTENSIONS]})

    def _extension(self, req: Request, alias: str) -> Response:
        for ext in EXTENSIONS:
            if ext[0] == alias:
                return ok({"extension": self._extension_doc(*ext)})
        raise ApiError(404, "HTTPNotFound", "", raw={
            "message": "The resource could not be found.<br /><br />\n"
                       f"Extension with alias {alias} does not exist\n\n",
            "code": "404 Not Found", "title": "Not Found"})

    # --- agents ---------------------------------------------------------------------

    def agent(self, agent_id: str) -> AgentRec:
        return found(self.world.agents.get(agent_id), "AgentNotFound",
                     f"Agent {agent_id} could not be found.")

    def router(self, router_id: str) -> RouterRec:
        return found(self.world.routers.get(router_id), "RouterNotFound",
                     f"Router {router_id} could not be found")

    def network(self, net_id: str) -> NetworkRec:
        return found(self.world.networks.get(net_id), "NetworkNotFound",
                     f"Network {net_id} could not be found.")

    def collection_url(self, req: Request) -> str:
        return f"{req.base}{req.path}"

    def _list_agents(self, req: Request) -> Response:
        now = self.clock.wall()
        return ok(list_collection(
            list(self.world.agents.values()), lambda a: render.agent_doc(self.sim, a, now),
            lambda a: a.id, req.params, AGENTS, self.collection_url(req)))

    def _create_agent(self, req: Request) -> Response:
        raise ApiError(400, "BadRequest",
                       "Bad agents request: Agent creation using API is not supported..")

    def _show_agent(self, req: Request, agent_id: str) -> Response:
        doc = render.agent_doc(self.sim, self.agent(agent_id), self.clock.wall())
        return ok({"agent": only_fields(req, doc)})

    def _update_agent(self, req: Request, agent_id: str) -> Response:
        agent = self.agent(agent_id)
        changes = resource_body(req.body, "agent")
        known = set(render.agent_doc(self.sim, agent, self.clock.wall()))
        for key in changes:
            if key not in known:
                raise bad_request(f"Unrecognized attribute(s) '{key}'")
            if key not in ("admin_state_up", "description"):
                raise bad_request(f"Cannot update read-only attribute {key}")
        if "description" in changes:
            value = changes["description"]
            if value is not None and not isinstance(value, str):
                raise bad_request(f"Invalid input for description. Reason: '{value}' is not a "
                                  "valid string.")
            if value is not None and len(value) > DESCRIPTION_MAX:
                raise bad_request(f"Invalid input for description. Reason: '{value}' exceeds "
                                  f"maximum length of {DESCRIPTION_MAX}.")
            agent.description = value
        if "admin_state_up" in changes:
            up = as_bool(changes["admin_state_up"], "admin_state_up")
            self.sim.lifecycle.set_admin_state(agent, up)
        return ok({"agent": render.agent_doc(self.sim, agent, self.clock.wall())})

    def _delete_agent(self, req: Request, agent_id: str) -> Response:
        agent = self.agent(agent_id)
        for router in list(agent.routers.values()):
            self.sim.unbind(router, agent)
        self.sim.lifecycle.kill(agent, node=False)
        self.world.dhcp.forget_agent(agent)  # a DHCP agent's bindings go (its ports stay)
        del self.world.agents[agent.id]
        if self.world.agents_by_host.get(agent.host) is agent:
            del self.world.agents_by_host[agent.host]
        return no_content()

    # --- l3 agent scheduler shims ------------------------------------------------------

    def _agent_routers(self, req: Request, agent_id: str) -> Response:
        routers = self.agent(agent_id).routers.values()
        return ok({"routers": render.scheduled_router_docs(routers, self.public)})

    def _bind(self, req: Request, agent_id: str) -> Response:
        router = self.router(router_id_of(req.body))
        agent = self.agent(agent_id)
        self._check_bindable(router, agent)
        if agent.id in router.bindings:
            return ok(None, 201)
        if router.bindings and not router.ha:
            existing = next(iter(router.bindings))
            raise ApiError(409, "RouterHostedByL3Agent",
                           f"The router {router.id} has been already hosted by the L3 Agent "
                           f"{existing}.")
        self.sim.bind(router, agent)
        return ok(None, 201)

    def _check_bindable(self, router: RouterRec, agent: AgentRec) -> None:
        if not agent.is_l3:
            raise invalid_l3_agent(agent)
        if agent.mode in ("dvr", "dvr_no_external"):
            raise ApiError(409, "DVRL3CannotAssignToDvrAgent",
                           "Not allowed to manually assign a router to an agent in 'dvr' mode.")
        if agent.mode == "legacy" and router.distributed:
            raise ApiError(409, "RouterL3AgentMismatch",
                           f"Cannot host distributed router {router.id} on legacy L3 agent "
                           f"{agent.id}.")
        if not agent.admin_state_up:
            raise invalid_l3_agent(agent)

    def _unbind(self, req: Request, agent_id: str, router_id: str) -> Response:
        agent = self.agent(agent_id)
        if agent.mode in ("dvr", "dvr_no_external"):
            raise ApiError(409, "DVRL3CannotRemoveFromDvrAgent",
                           "Not allowed to manually remove a router from an agent in 'dvr' "
                           "mode.")
        router = self.world.routers.get(router_id)
        if router is not None:
            self.sim.unbind(router, agent)
        self.router(router_id)
        return no_content()

    def _update_binding(self, req: Request, agent_id: str, router_id: str) -> Response:
        raise ApiError(501, "NotImplementedError",
                       "Updating a router in an L3 agent is not supported for this backend",
                       root="NotImplementedError")


def invalid_l3_agent(agent: AgentRec) -> ApiError:
    return ApiError(404, "InvalidL3Agent",
                    f"Agent {agent.id} is not a L3 Agent or has been disabled")
