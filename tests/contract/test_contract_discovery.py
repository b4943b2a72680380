"""Contract: version discovery, the /v2.0/ index, the .json suffix and the NeutronError body.

Rows of NEUTRON.md "Transport and discovery", held against both backends.
"""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlsplit

from tests.contract.contract_http import Api


def test_root_lists_v2_as_current_with_a_self_link_built_from_the_request_host(
    api: Api, backend: Any
) -> None:
    port = urlsplit(backend.url).port
    for host in ("127.0.0.1", "localhost"):
        reply = api.get("/", headers={"Host": f"{host}:{port}"})
        assert reply.status == 200
        assert reply.json() == {
            "versions": [
                {
                    "id": "v2.0",
                    "status": "CURRENT",
                    "links": [{"rel": "self", "href": f"http://{host}:{port}/v2.0/"}],
                }
            ]
        }


def test_v2_index_lists_resources_and_needs_its_trailing_slash(api: Api) -> None:
    index = api.get("/v2.0/")
    assert index.status == 200
    collections = {resource["collection"] for resource in index.json()["resources"]}
    assert {"networks", "ports"} <= collections
    assert api.get("/v2.0").status == 404


def test_json_suffix_is_accepted_on_collections_and_members(api: Api, backend: Any) -> None:
    agent = backend.new_agent()
    listed = api.get(f"/v2.0/agents.json?host={agent.host}")
    assert listed.status == 200
    assert [found["id"] for found in listed.json()["agents"]] == [agent.id]
    shown = api.get(f"/v2.0/agents/{agent.id}.json")
    assert shown.status == 200
    assert shown.json()["agent"]["host"] == agent.host


def test_errors_are_neutron_error_bodies(api: Api) -> None:
    missing = str(uuid.uuid4())
    reply = api.get(f"/v2.0/routers/{missing}")
    assert reply.status == 404
    assert reply.headers.get("Content-Type", "").startswith("application/json")
    error = reply.json()["NeutronError"]
    assert set(error) == {"type", "message", "detail"}
    assert error["type"] == "RouterNotFound"
    assert missing in error["message"]
    assert error["detail"] == ""


def test_sdk_discovers_the_network_endpoint_from_the_root(conn: Any, backend: Any) -> None:
    agent = backend.new_agent()
    assert conn.network.get_agent(agent.id).host == agent.host
