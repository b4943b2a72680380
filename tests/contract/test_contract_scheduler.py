"""Contract: the L3 agent scheduler shim endpoints (l3-routers / l3-agents) and their checks.

Rows of NEUTRON.md "L3 agent scheduler", held against both backends with raw HTTP,
because the exact codes and bodies are the contract (the SDK hides them).
"""

from __future__ import annotations

import uuid
from typing import Any

from tests.contract.contract_http import Api

ROUTER_SCHEDULER_EXTRAS = {"ha_state", "resource_versions", "ha_chassis_priority"}


def test_bind_answers_201_with_a_json_null_body(api: Api, backend: Any, new_router: Any) -> None:
    agent, router = backend.new_agent(), new_router()
    reply = api.bind(agent.id, router)
    assert reply.status == 201
    assert reply.text.strip() == "null"
    assert reply.json() is None
    assert api.hosting_agent_ids(router) == {agent.id}


def test_l3_routers_lists_full_router_dicts_of_the_agent(
    api: Api, backend: Any, new_router: Any
) -> None:
    agent, router = backend.new_agent(), new_router()
    assert api.get(f"/v2.0/agents/{agent.id}/l3-routers").json() == {"routers": []}
    api.bind(agent.id, router)
    reply = api.get(f"/v2.0/agents/{agent.id}/l3-routers")
    assert reply.status == 200
    routers = reply.json()["routers"]
    assert [found["id"] for found in routers] == [router]
    assert {"id", "name", "ha", "distributed", "admin_state_up", "status"} <= set(routers[0])


def test_l3_agents_lists_hosting_agents_with_ha_state(
    api: Api, backend: Any, new_router: Any
) -> None:
    agent, router = backend.new_agent(), new_router()
    api.bind(agent.id, router)
    reply = api.get(f"/v2.0/routers/{router}/l3-agents")
    assert reply.status == 200
    (hosting,) = reply.json()["agents"]
    assert hosting["id"] == agent.id
    assert set(hosting) >= ROUTER_SCHEDULER_EXTRAS
    assert hosting["ha_state"] is None
    assert hosting["ha_chassis_priority"] is None


def test_bind_unknown_router_is_404_router_not_found(api: Api, backend: Any) -> None:
    agent = backend.new_agent()
    reply = api.bind(agent.id, str(uuid.uuid4()))
    assert reply.status == 404
    assert reply.error_type() == "RouterNotFound"


def test_bind_unknown_agent_is_404_agent_not_found(api: Api, new_router: Any) -> None:
    router = new_router()
    reply = api.bind(str(uuid.uuid4()), router)
    assert reply.status == 404
    assert reply.error_type() == "AgentNotFound"
    assert api.hosting_agent_ids(router) == set()


def test_unknown_router_is_checked_before_unknown_agent(api: Api) -> None:
    reply = api.bind(str(uuid.uuid4()), str(uuid.uuid4()))
    assert (reply.status, reply.error_type()) == (404, "RouterNotFound")


def test_bind_to_admin_down_agent_is_404_invalid_l3_agent(
    api: Api, backend: Any, new_router: Any
) -> None:
    agent, router = backend.new_agent(), new_router()
    backend.set_admin_state(agent, False)
    reply = api.bind(agent.id, router)
    assert reply.status == 404
    assert reply.error_type() == "InvalidL3Agent"
    assert agent.id in reply.json()["NeutronError"]["message"]
    assert api.hosting_agent_ids(router) == set()


def test_bind_to_same_agent_again_is_a_201_no_op(api: Api, backend: Any, new_router: Any) -> None:
    agent, router = backend.new_agent(), new_router()
    api.bind(agent.id, router)
    again = api.bind(agent.id, router)
    assert (again.status, again.json()) == (201, None)
    assert api.hosting_agent_ids(router) == {agent.id}


def test_non_ha_router_bound_elsewhere_is_409_naming_the_hosting_agent(
    api: Api, backend: Any, new_router: Any
) -> None:
    first, second, router = backend.new_agent(), backend.new_agent(), new_router()
    api.bind(first.id, router)
    reply = api.bind(second.id, router)
    assert reply.status == 409
    assert reply.error_type() == "RouterHostedByL3Agent"
    message = reply.json()["NeutronError"]["message"]
    assert first.id in message
    assert router in message
    assert api.hosting_agent_ids(router) == {first.id}


def test_bind_to_a_dead_agent_is_accepted(api: Api, backend: Any, new_router: Any) -> None:
    agent, router = backend.new_agent(), new_router()
    backend.kill_agent(agent)
    assert api.agent(agent.id)["alive"] is False
    reply = api.bind(agent.id, router)
    assert (reply.status, reply.json()) == (201, None)
    assert api.hosting_agent_ids(router) == {agent.id}


def test_disabling_an_agent_keeps_its_bindings(api: Api, backend: Any, new_router: Any) -> None:
    agent, router = backend.new_agent(), new_router()
    api.bind(agent.id, router)
    backend.set_admin_state(agent, False)
    assert api.hosting_agent_ids(router) == {agent.id}
    listed = api.get(f"/v2.0/agents/{agent.id}/l3-routers").json()["routers"]
    assert [found["id"] for found in listed] == [router]


def test_unbind_is_204_and_idempotent(api: Api, backend: Any, new_router: Any) -> None:
    agent, router = backend.new_agent(), new_router()
    api.bind(agent.id, router)
    first = api.unbind(agent.id, router)
    assert (first.status, first.text) == (204, "")
    assert api.hosting_agent_ids(router) == set()
    second = api.unbind(agent.id, router)
    assert (second.status, second.text) == (204, "")


def test_unbind_unknown_router_is_404_router_not_found(api: Api, backend: Any) -> None:
    agent = backend.new_agent()
    reply = api.unbind(agent.id, str(uuid.uuid4()))
    assert reply.status == 404
    assert reply.error_type() == "RouterNotFound"


def test_legacy_move_is_delete_then_post(api: Api, backend: Any, new_router: Any) -> None:
    source, target, router = backend.new_agent(), backend.new_agent(), new_router()
    api.bind(source.id, router)
    assert api.unbind(source.id, router).status == 204
    assert api.hosting_agent_ids(router) == set()
    assert api.bind(target.id, router).status == 201
    assert api.hosting_agent_ids(router) == {target.id}


def test_put_on_a_binding_is_501(api: Api, backend: Any, new_router: Any) -> None:
    agent, router = backend.new_agent(), new_router()
    api.bind(agent.id, router)
    reply = api.put(f"/v2.0/agents/{agent.id}/l3-routers/{router}", {})
    assert reply.status == 501
    error = reply.json()["NotImplementedError"]
    assert error["type"] == "NotImplementedError"
    assert error["message"]


def test_ha_router_may_gain_more_bindings(api: Api, backend: Any, new_router: Any) -> None:
    router = new_router(ha=True)
    already = api.hosting_agent_ids(router)
    added = [backend.new_agent(), backend.new_agent()]
    for agent in added:
        reply = api.bind(agent.id, router)
        assert (reply.status, reply.json()) == (201, None)
    assert api.hosting_agent_ids(router) == already | {agent.id for agent in added}
    states = {
        hosting["id"]: hosting["ha_state"]
        for hosting in api.get(f"/v2.0/routers/{router}/l3-agents").json()["agents"]
    }
    assert set(states.values()) <= {"active", "standby", "unknown"}


def test_ha_move_adds_the_new_binding_before_removing_the_old(
    api: Api, backend: Any, new_router: Any
) -> None:
    router = new_router(ha=True)
    old, new = backend.new_agent(), backend.new_agent()
    api.bind(old.id, router)
    assert api.bind(new.id, router).status == 201
    assert {old.id, new.id} <= api.hosting_agent_ids(router)
    assert api.unbind(old.id, router).status == 204
    hosting = api.hosting_agent_ids(router)
    assert new.id in hosting
    assert old.id not in hosting


def test_any_router_on_a_dvr_agent_is_409(api: Api, backend: Any, new_router: Any) -> None:
    agent = backend.new_agent(mode="dvr")
    for router in (new_router(), new_router(distributed=True)):
        reply = api.bind(agent.id, router)
        assert reply.status == 409
        assert reply.error_type() == "DVRL3CannotAssignToDvrAgent"


def test_dvr_router_on_a_legacy_agent_is_409(api: Api, backend: Any, new_router: Any) -> None:
    agent, router = backend.new_agent(), new_router(distributed=True)
    reply = api.bind(agent.id, router)
    assert reply.status == 409
    assert reply.error_type() == "RouterL3AgentMismatch"
    assert api.hosting_agent_ids(router) == set()
