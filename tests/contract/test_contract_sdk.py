"""Contract: what openstacksdk does with the scheduler calls (the traps l3ha must read back).

Rows of NEUTRON.md "Client traps", held against both backends: the SDK's behaviour
depends on the server's codes and bodies, so these pin both.
"""

from __future__ import annotations

import uuid
from typing import Any

from tests.contract.contract_http import Api


def hosting_ids(conn: Any, router: str) -> set[str]:
    return {agent.id for agent in conn.network.routers_hosting_l3_agents(router)}


def test_add_router_to_agent_returns_none_on_success(
    conn: Any, backend: Any, new_router: Any
) -> None:
    agent, router = backend.new_agent(), new_router()
    assert conn.network.add_router_to_agent(agent.id, router) is None
    assert hosting_ids(conn, router) == {agent.id}
    # Membership, not equality: on the shared emulator an unhosted router another test left
    # may be auto-scheduled to this agent when it resyncs (router_auto_schedule, as Neutron).
    assert router in [found.id for found in conn.network.agent_hosted_routers(agent.id)]


def test_add_router_to_agent_does_not_raise_on_409(
    conn: Any, backend: Any, new_router: Any
) -> None:
    first, second, router = backend.new_agent(), backend.new_agent(), new_router()
    conn.network.add_router_to_agent(first.id, router)
    result = conn.network.add_router_to_agent(second.id, router)
    assert result["NeutronError"]["type"] == "RouterHostedByL3Agent"
    assert hosting_ids(conn, router) == {first.id}


def test_add_router_to_agent_does_not_raise_on_404(
    conn: Any, backend: Any, new_router: Any
) -> None:
    agent, router = backend.new_agent(), new_router()
    backend.set_admin_state(agent, False)
    result = conn.network.add_router_to_agent(agent.id, router)
    assert result["NeutronError"]["type"] == "InvalidL3Agent"
    assert hosting_ids(conn, router) == set()


def test_remove_router_from_agent_swallows_404(conn: Any, backend: Any) -> None:
    agent = backend.new_agent()
    assert conn.network.remove_router_from_agent(agent.id, str(uuid.uuid4())) is None


def test_remove_router_from_agent_unbinds_and_repeats_quietly(
    conn: Any, backend: Any, new_router: Any
) -> None:
    agent, router = backend.new_agent(), new_router()
    conn.network.add_router_to_agent(agent.id, router)
    conn.network.remove_router_from_agent(agent.id, router)
    assert hosting_ids(conn, router) == set()
    conn.network.remove_router_from_agent(agent.id, router)
    assert hosting_ids(conn, router) == set()


def test_hosting_agent_objects_make_the_scheduler_calls_miss_silently(
    conn: Any, api: Api, backend: Any, new_router: Any
) -> None:
    router, first = new_router(), backend.new_agent()
    api.bind(first.id, router)
    hosting_object = next(
        agent for agent in conn.network.routers_hosting_l3_agents(router) if agent.id == first.id
    )
    conn.network.remove_router_from_agent(hosting_object, router)
    assert hosting_ids(conn, router) == {first.id}
    conn.network.remove_router_from_agent(first.id, router)
    assert first.id not in hosting_ids(conn, router)
