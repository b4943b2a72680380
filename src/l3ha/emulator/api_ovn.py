"""Neutron 29's ML2/OVN agent and L3 scheduler API over the emulated gateway plane.

No I/O, but not pure: handlers read the emulator's clock and change the gateway plane.

In OVN mode ``/v2.0/agents`` lists gateway chassis as "OVN Controller Gateway agent"
(id = chassis name, alive by Neutron's nb_cfg rule), ``PUT /v2.0/agents/{id}`` is
refused, and the scheduler calls read and change HA chassis group priorities with the
answers Neutron's ``services/ovn_l3/plugin.py`` gives (docs/ovn.md). Handlers run under
``world.lock``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from l3ha.emulator import render
from l3ha.emulator.api_core import AGENTS, ApiCore
from l3ha.emulator.http_types import (
    Request,
    Response,
    no_content,
    ok,
    router_id_of,
)
from l3ha.emulator.ovn_world import (
    GATEWAY_AGENT_TYPE,
    HIGHEST_PRIORITY,
    LOWEST_PRIORITY,
    MAX_GW_CHASSIS,
    Chassis,
    Gateway,
)
from l3ha.emulator.query import ApiError, bad_request, found, list_collection
from l3ha.emulator.sim_ovn import OvnSimulation

Doc = dict[str, Any]


def invalid_agent(agent_id: str) -> ApiError:
    return ApiError(
        404, "InvalidL3Agent", f"Agent {agent_id} is not a L3 Agent or has been disabled"
    )


def invalid_priority() -> ApiError:
    return ApiError(
        400,
        "InvalidHAChassisPriority",
        f"HA Chassis priority must be between {LOWEST_PRIORITY} and {HIGHEST_PRIORITY}",
    )


def priority_taken(priority: int) -> ApiError:
    return ApiError(
        409,
        "HAChassisPriorityAlreadyAssigned",
        f"HA Chassis priority {priority} is already assigned",
    )


class OvnApi:
    """Handlers for the agent and L3 scheduler calls of an ML2/OVN cloud."""

    def __init__(self, core: ApiCore, ovn: OvnSimulation) -> None:
        self.core = core
        self.ovn = ovn

    # --- agents --------------------------------------------------------------------------

    def agent_doc(self, chassis: Chassis) -> Doc:
        """What neutron_agent.NeutronAgent.as_dict shows for a gateway chassis."""
        stamp = datetime.fromtimestamp(chassis.nb_cfg_wall, UTC).strftime("%Y-%m-%d %H:%M:%S")
        return {
            "binary": "ovn-controller", "host": chassis.host, "heartbeat_timestamp": stamp,
            "availability_zone": chassis.az, "topic": "n/a", "description": "",
            "configurations": {"chassis_name": chassis.name,
                               "bridge-mappings": "physnet1:br-ex"},
            "start_flag": True, "agent_type": GATEWAY_AGENT_TYPE, "id": chassis.name,
            "alive": self.ovn.alive(chassis), "admin_state_up": True,
        }  # fmt: skip

    def chassis(self, agent_id: str) -> Chassis:
        chassis = self.ovn.ovn.chassis.get(agent_id)
        return found(chassis, "AgentNotFound", f"Agent {agent_id} could not be found.")

    def list_agents(self, req: Request) -> Response:
        self.ovn.ping()
        return ok(
            list_collection(
                list(self.ovn.ovn.chassis.values()),
                self.agent_doc,
                lambda c: c.name,
                req.params,
                AGENTS,
                self.core.collection_url(req),
            )
        )

    def show_agent(self, req: Request, agent_id: str) -> Response:
        return ok({"agent": self.agent_doc(self.chassis(agent_id))})

    def update_agent(self, req: Request, agent_id: str) -> Response:
        self.chassis(agent_id)
        raise ApiError(400, "BadRequest", "Bad agent request: OVN agent status cannot be updated.")

    # --- scheduler -----------------------------------------------------------------------

    def _gateway(self, router_id: str) -> Gateway:
        gateway = self.ovn.gateway_of(self.core.router(router_id))
        return gateway if gateway is not None else Gateway(router_id)

    def router_agents(self, req: Request, router_id: str) -> Response:
        gateway = self._gateway(router_id)
        self.ovn.ping()  # Neutron lists the agents to answer
        agents = []
        for name, priority in gateway.priorities.items():
            chassis = self.ovn.ovn.chassis.get(name)
            if chassis is not None:
                agents.append({**self.agent_doc(chassis), "ha_chassis_priority": priority})
        return ok({"agents": agents})

    def agent_routers(self, req: Request, agent_id: str) -> Response:
        if agent_id not in self.ovn.ovn.chassis:
            raise invalid_agent(agent_id)
        routers = [
            self.core.world.routers[g.router_id]
            for g in self.ovn.ovn.gateways.values()
            if agent_id in g.priorities and g.router_id in self.core.world.routers
        ]
        return ok({"routers": render.scheduled_router_docs(routers, self.core.public)})

    def _priority(self, body: Doc) -> int | None:
        if "ha_chassis_priority" not in body or body["ha_chassis_priority"] is None:
            return None
        value = body["ha_chassis_priority"]
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad_request(
                f"Invalid input for ha_chassis_priority. Reason: '{value}' is not an integer."
            )
        if not LOWEST_PRIORITY <= value <= HIGHEST_PRIORITY:
            raise invalid_priority()
        return value

    def add(self, req: Request, agent_id: str) -> Response:
        router_id = router_id_of(req.body)
        priority = self._priority(req.body)
        gateway = self._gateway(router_id)
        if agent_id not in self.ovn.ovn.chassis:
            raise invalid_agent(agent_id)
        if agent_id in gateway.priorities:
            raise ApiError(
                409,
                "RouterHostedByL3Agent",
                f"The router {gateway.router_id} has been already hosted by the L3 "
                f"Agent {agent_id}.",
            )
        if priority is not None and priority in gateway.priorities.values():
            raise priority_taken(priority)
        if priority is None:
            priority = min(gateway.priorities.values(), default=MAX_GW_CHASSIS + 1) - 1
            if priority < LOWEST_PRIORITY:
                raise invalid_priority()
        self.ovn.ovn.gateways[gateway.router_id] = gateway
        gateway.priorities[agent_id] = priority
        self.ovn.moved(gateway)
        return ok(None, 201)

    def change(self, req: Request, agent_id: str, router_id: str) -> Response:
        body = req.body if isinstance(req.body, dict) else {}
        priority = self._priority(body)
        if priority is None:
            return ok(None)
        if agent_id not in self.ovn.ovn.chassis:
            raise invalid_agent(agent_id)
        gateway = self._gateway(router_id)
        if agent_id not in gateway.priorities:
            raise not_hosted(router_id, agent_id)
        if priority in gateway.priorities.values():
            raise priority_taken(priority)
        gateway.priorities[agent_id] = priority
        self.ovn.moved(gateway)
        return ok(None)

    def remove(self, req: Request, agent_id: str, router_id: str) -> Response:
        if agent_id not in self.ovn.ovn.chassis:
            raise invalid_agent(agent_id)
        gateway = self._gateway(router_id)
        if agent_id not in gateway.priorities:
            raise not_hosted(router_id, agent_id)
        del gateway.priorities[agent_id]
        self.ovn.moved(gateway)
        return no_content()


def not_hosted(router_id: str, agent_id: str) -> ApiError:
    return ApiError(
        409,
        "RouterNotHostedByL3Agent",
        f"The router {router_id} is not hosted by L3 agent {agent_id}.",
    )
