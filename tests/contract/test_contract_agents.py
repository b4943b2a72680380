"""Contract: the agents API — filters, fields, sorting, paging, field set, update, liveness.

Rows of NEUTRON.md "Agents" and "Pagination", held against both backends, through
openstacksdk where l3ha uses it and raw HTTP where the exact wire form matters.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from tests.contract.contract_http import Api

AGENT_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?$")
L3_AGENT_FIELDS = {
    "id",
    "agent_type",
    "binary",
    "host",
    "topic",
    "admin_state_up",
    "alive",
    "availability_zone",
    "heartbeat_timestamp",
    "created_at",
    "started_at",
    "description",
    "resources_synced",
    "configurations",
}
SORTABLE = {
    "id",
    "host",
    "agent_type",
    "binary",
    "topic",
    "admin_state_up",
    "description",
    "created_at",
    "started_at",
    "heartbeat_timestamp",
}
FILTERABLE = {
    "id",
    "agent_type",
    "binary",
    "topic",
    "host",
    "admin_state_up",
    "alive",
    "availability_zone",
    "description",
}


def hosts_of(reply: Any) -> list[str]:
    return [agent["host"] for agent in reply.json()["agents"]]


def test_l3_agent_has_the_documented_fields_and_values(api: Api, backend: Any) -> None:
    agent = api.agent(backend.new_agent().id)
    assert set(agent) >= L3_AGENT_FIELDS
    assert agent["agent_type"] == "L3 agent"
    assert agent["binary"] == "neutron-l3-agent"
    assert agent["topic"] == "l3_agent"
    assert agent["alive"] is True
    assert agent["admin_state_up"] is True
    assert agent["resources_synced"] is None
    assert agent["configurations"]["agent_mode"] == "legacy"
    assert isinstance(agent["configurations"]["handle_internal_only_routers"], bool)


def test_agent_timestamps_are_naive_utc_with_a_space(api: Api, backend: Any) -> None:
    agent = api.agent(backend.new_agent().id)
    for key in ("heartbeat_timestamp", "created_at", "started_at"):
        assert AGENT_TIMESTAMP.match(agent[key]), (key, agent[key])


@pytest.mark.parametrize("key", sorted(FILTERABLE))
def test_each_documented_filter_key_is_accepted(api: Api, key: str) -> None:
    value = "true" if key in {"admin_state_up", "alive"} else "x-no-such-value"
    assert api.get(f"/v2.0/agents?{key}={value}").status == 200


def test_filters_select_agents(api: Api, backend: Any) -> None:
    first, second = backend.new_agent(), backend.new_agent()
    assert hosts_of(api.get(f"/v2.0/agents?host={first.host}")) == [first.host]
    both = api.get(f"/v2.0/agents?host={first.host}&host={second.host}")
    assert sorted(hosts_of(both)) == sorted([first.host, second.host])
    typed = api.get(f"/v2.0/agents?agent_type=L3%20agent&host={first.host}")
    assert hosts_of(typed) == [first.host]
    assert hosts_of(api.get(f"/v2.0/agents?agent_type=DHCP%20agent&host={first.host}")) == []
    backend.set_admin_state(second, False)
    disabled = hosts_of(api.get("/v2.0/agents?admin_state_up=false"))
    assert second.host in disabled
    assert first.host not in disabled


def test_unknown_filter_key_is_400_naming_it(api: Api) -> None:
    reply = api.get("/v2.0/agents?foo=1")
    assert reply.status == 400
    error = reply.json()["NeutronError"]
    assert error["type"] == "HTTPBadRequest"
    assert error["message"] == "['foo'] is invalid attribute for filtering"


def test_fields_limit_the_attributes(api: Api, backend: Any) -> None:
    agent = backend.new_agent()
    reply = api.get(f"/v2.0/agents?host={agent.host}&fields=id&fields=host")
    assert reply.json()["agents"] == [{"id": agent.id, "host": agent.host}]
    shown = api.get(f"/v2.0/agents/{agent.id}?fields=alive")
    assert shown.json() == {"agent": {"alive": True}}


def test_sort_key_and_dir_order_the_list(api: Api, backend: Any) -> None:
    backend.new_agent()
    backend.new_agent()
    ascending = hosts_of(api.get("/v2.0/agents?sort_key=host&sort_dir=asc&fields=host"))
    descending = hosts_of(api.get("/v2.0/agents?sort_key=host&sort_dir=desc&fields=host"))
    assert len(ascending) >= 2
    assert ascending == sorted(ascending)
    assert descending == sorted(ascending, reverse=True)


@pytest.mark.parametrize("key", sorted(SORTABLE))
def test_every_sortable_key_is_accepted(api: Api, key: str) -> None:
    assert api.get(f"/v2.0/agents?sort_key={key}&sort_dir=asc&fields=id").status == 200


def test_bad_sort_requests_are_400(api: Api) -> None:
    alive = api.get("/v2.0/agents?sort_key=alive&sort_dir=asc")
    assert alive.status == 400
    assert alive.json()["NeutronError"] == {
        "type": "BadRequest",
        "message": "Bad agents request: 'alive' is an invalid attribute for sort key.",
        "detail": "",
    }
    unsortable = api.get("/v2.0/agents?sort_key=configurations&sort_dir=asc")
    assert unsortable.status == 400
    assert unsortable.json()["NeutronError"]["message"] == (
        "['configurations'] is invalid attribute for sort_keys"
    )
    direction = api.get("/v2.0/agents?sort_key=host&sort_dir=up")
    assert direction.status == 400
    assert direction.json()["NeutronError"]["message"] == (
        "['up'] is invalid value for sort_dirs, valid value is 'asc' and 'desc'"
    )


def test_bad_limit_is_400(api: Api) -> None:
    reply = api.get("/v2.0/agents?limit=x")
    assert reply.status == 400
    assert reply.json()["NeutronError"] == {
        "type": "BadRequest",
        "message": "Bad limit request: Limit must be an integer 0 or greater and not 'x'.",
        "detail": "",
    }


def test_unknown_marker_on_agents_restarts_from_the_first_page(api: Api, backend: Any) -> None:
    backend.new_agent()
    first_page = api.get("/v2.0/agents?limit=1&fields=id").json()["agents"]
    for marker in ("00000000-0000-0000-0000-000000000000", "junk"):
        reply = api.get(f"/v2.0/agents?limit=1&fields=id&marker={marker}")
        assert reply.status == 200
        assert reply.json()["agents"] == first_page


def test_limit_gives_a_next_link_with_a_marker(api: Api, backend: Any) -> None:
    backend.new_agent()
    backend.new_agent()
    page = api.get("/v2.0/agents?limit=1").json()
    assert len(page["agents"]) == 1
    next_links = [link for link in page["agents_links"] if link["rel"] == "next"]
    assert len(next_links) == 1
    assert f"marker={page['agents'][0]['id']}" in next_links[0]["href"]
    marker = page["agents"][0]["id"]
    following = api.get(f"/v2.0/agents?limit=1&marker={marker}").json()["agents"]
    assert [agent["id"] for agent in following] != [marker]


def test_sdk_pages_through_every_agent_without_looping(conn: Any, backend: Any) -> None:
    backend.new_agent()
    backend.new_agent()
    every = [agent.id for agent in conn.network.agents()]
    paged = [agent.id for agent in conn.network.agents(limit=2)]
    assert len(every) >= 3
    assert sorted(paged) == sorted(every)
    assert len(set(paged)) == len(paged)


def test_update_changes_admin_state_and_description_only(api: Api, backend: Any) -> None:
    agent = backend.new_agent()
    reply = api.put(
        f"/v2.0/agents/{agent.id}",
        {"agent": {"admin_state_up": False, "description": "drained by contract"}},
    )
    assert reply.status == 200
    assert reply.json()["agent"]["admin_state_up"] is False
    assert reply.json()["agent"]["description"] == "drained by contract"
    shown = api.agent(agent.id)
    assert (shown["admin_state_up"], shown["description"]) == (False, "drained by contract")
    refused = api.put(f"/v2.0/agents/{agent.id}", {"agent": {"host": "elsewhere"}})
    assert refused.status == 400
    assert refused.json()["NeutronError"]["message"] == "Cannot update read-only attribute host"
    assert api.agent(agent.id)["host"] == agent.host


def test_bad_updates_are_400_and_change_nothing(api: Api, backend: Any) -> None:
    agent = backend.new_agent()
    path = f"/v2.0/agents/{agent.id}"
    assert api.put(path, {"agent": {"description": "d" * 255}}).status == 200
    too_long = api.put(path, {"agent": {"description": "e" * 256}})
    assert too_long.status == 400
    assert too_long.json()["NeutronError"]["message"] == (
        f"Invalid input for description. Reason: '{'e' * 256}' exceeds maximum length of 255."
    )
    not_boolean = api.put(path, {"agent": {"admin_state_up": "maybe"}})
    assert not_boolean.status == 400
    assert not_boolean.json()["NeutronError"] == {
        "type": "InvalidInput",
        "message": "Invalid input for operation: 'maybe' cannot be converted to boolean.",
        "detail": "",
    }
    no_body = api.put(path, {})
    assert (no_body.status, no_body.json()["NeutronError"]["message"]) == (
        400,
        "Resource body required",
    )
    shown = api.agent(agent.id)
    assert (shown["description"], shown["admin_state_up"]) == ("d" * 255, True)


def test_sdk_updates_admin_state(conn: Any, backend: Any) -> None:
    agent = backend.new_agent()
    conn.network.update_agent(agent.id, admin_state_up=False, description="x")
    updated = conn.network.get_agent(agent.id)
    assert updated.is_admin_state_up is False
    assert updated.description == "x"


def test_killed_agent_turns_dead_and_a_revived_one_alive_with_a_new_start(
    conn: Any, backend: Any
) -> None:
    agent = backend.new_agent()
    before = conn.network.get_agent(agent.id)
    assert before.is_alive is True
    backend.kill_agent(agent)
    assert conn.network.get_agent(agent.id).is_alive is False
    assert agent.id in {found.id for found in conn.network.agents(is_alive=False)}
    backend.revive_agent(agent)
    after = conn.network.get_agent(agent.id)
    assert after.is_alive is True
    assert after.started_at != before.started_at
