"""Contract: router fields, tags, and router ports filtered by device_id (one or many) and owner.

Rows of NEUTRON.md "Routers and ports", held against both backends.
"""

from __future__ import annotations

import re
from typing import Any

from tests.contract.contract_http import Api

ISO_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
ROUTER_FIELDS = {
    "id",
    "name",
    "description",
    "project_id",
    "tenant_id",
    "admin_state_up",
    "status",
    "external_gateway_info",
    "routes",
    "ha",
    "distributed",
    "availability_zone_hints",
    "availability_zones",
    "flavor_id",
    "revision_number",
    "created_at",
    "updated_at",
    "tags",
}
HA_PORT = "network:router_ha_interface"


def test_router_has_the_documented_fields(api: Api, new_router: Any) -> None:
    router = api.get(f"/v2.0/routers/{new_router()}").json()["router"]
    assert set(router) >= ROUTER_FIELDS
    assert router["status"] == "ACTIVE"
    assert (router["ha"], router["distributed"]) == (False, False)
    assert router["tags"] == []
    for key in ("created_at", "updated_at"):
        assert ISO_Z.match(router[key]), (key, router[key])


def test_router_availability_zones_come_from_its_hosting_agents(
    api: Api, backend: Any, new_router: Any
) -> None:
    agent, router = backend.new_agent(), new_router()
    assert api.get(f"/v2.0/routers/{router}").json()["router"]["availability_zones"] == []
    api.bind(agent.id, router)
    zone = api.agent(agent.id)["availability_zone"]
    assert api.get(f"/v2.0/routers/{router}").json()["router"]["availability_zones"] == [zone]


def test_router_flags_follow_creation(api: Api, new_router: Any) -> None:
    ha = api.get(f"/v2.0/routers/{new_router(ha=True)}").json()["router"]
    dvr = api.get(f"/v2.0/routers/{new_router(distributed=True)}").json()["router"]
    assert (ha["ha"], ha["distributed"]) == (True, False)
    assert (dvr["ha"], dvr["distributed"]) == (False, True)


def test_routers_list_filters_by_id_and_limits_fields(api: Api, new_router: Any) -> None:
    first, second = new_router(), new_router()
    reply = api.get(f"/v2.0/routers?id={first}&id={second}&fields=id&fields=ha")
    assert reply.status == 200
    assert sorted(reply.json()["routers"], key=lambda r: r["id"]) == sorted(
        [{"id": first, "ha": False}, {"id": second, "ha": False}], key=lambda r: r["id"]
    )


def test_routers_cannot_be_filtered_by_ha_distributed_or_status(api: Api) -> None:
    for key, value in (("ha", "true"), ("distributed", "false"), ("status", "ACTIVE")):
        reply = api.get(f"/v2.0/routers?{key}={value}")
        assert reply.status == 400
        assert reply.json()["NeutronError"]["message"] == (
            f"['{key}'] is invalid attribute for filtering"
        )


def test_unknown_marker_on_routers_is_404(api: Api, new_router: Any) -> None:
    new_router()
    missing = "00000000-0000-0000-0000-000000000000"
    reply = api.get(f"/v2.0/routers?limit=1&marker={missing}")
    assert reply.status == 404
    assert reply.error_type() == "RouterNotFound"


def test_tags_are_put_one_by_one_and_listed(api: Api, new_router: Any) -> None:
    router = new_router()
    for tag in ("l3ha:busy", "l3ha:weight=5"):
        reply = api.put(f"/v2.0/routers/{router}/tags/{tag}")
        assert reply.status == 201
    listed = api.get(f"/v2.0/routers/{router}/tags")
    assert listed.status == 200
    assert sorted(listed.json()["tags"]) == ["l3ha:busy", "l3ha:weight=5"]
    shown = api.get(f"/v2.0/routers/{router}?fields=tags").json()["router"]
    assert sorted(shown["tags"]) == ["l3ha:busy", "l3ha:weight=5"]


def test_sdk_reads_router_tags(conn: Any, api: Api, new_router: Any) -> None:
    router = new_router()
    api.put(f"/v2.0/routers/{router}/tags/l3ha:busy")
    assert conn.network.get_router(router).tags == ["l3ha:busy"]
    assert router in {found.id for found in conn.network.routers(tags="l3ha:busy")}


def test_ha_router_has_one_ha_port_per_hosting_agent(
    api: Api, backend: Any, new_router: Any
) -> None:
    router = new_router(ha=True)
    for agent in (backend.new_agent(), backend.new_agent()):
        api.bind(agent.id, router)
    hosting = api.hosting_agent_ids(router)
    ports = api.get(f"/v2.0/ports?device_id={router}").json()["ports"]
    assert ports
    assert {port["device_id"] for port in ports} == {router}
    ha_ports = api.get(f"/v2.0/ports?device_id={router}&device_owner={HA_PORT}").json()["ports"]
    assert len(ha_ports) == len(hosting)
    assert {port["device_owner"] for port in ha_ports} == {HA_PORT}
    for port in ha_ports:
        assert port["status"] in {"ACTIVE", "DOWN", "BUILD", "ERROR", "N/A"}
        assert "binding:host_id" in port


def test_repeated_device_owner_filters_are_or(api: Api, backend: Any, new_router: Any) -> None:
    router = new_router(ha=True)
    api.bind(backend.new_agent().id, router)
    base = f"/v2.0/ports?device_id={router}&fields=id"
    only_ha = {port["id"] for port in api.get(f"{base}&device_owner={HA_PORT}").json()["ports"]}
    assert only_ha
    for owners in ((HA_PORT, "network:router_gateway"), ("network:router_gateway", HA_PORT)):
        query = "".join(f"&device_owner={owner}" for owner in owners)
        assert {port["id"] for port in api.get(base + query).json()["ports"]} == only_ha
    none = api.get(f"{base}&device_owner=network:router_gateway").json()["ports"]
    assert none == []


def test_ports_of_an_unknown_router_are_an_empty_list(api: Api) -> None:
    reply = api.get("/v2.0/ports?device_id=00000000-0000-0000-0000-000000000000")
    assert (reply.status, reply.json()) == (200, {"ports": []})


def test_repeated_device_id_filters_are_or(api: Api, ha_router: Any) -> None:
    """``GET /ports?device_id=A&device_id=B`` lists the ports of A and of B (one call polls
    many routers); an id that owns no port adds nothing."""
    (first, _), (second, _) = ha_router(1), ha_router(1)  # each has its HA port
    each = {
        router: {p["id"] for p in api.get(f"/v2.0/ports?device_id={router}").json()["ports"]}
        for router in (first, second)
    }
    assert each[first] and each[second] and not each[first] & each[second]
    unknown = "00000000-0000-0000-0000-000000000000"
    query = f"/v2.0/ports?device_id={first}&device_id={unknown}&device_id={second}"
    both = api.get(query).json()["ports"]
    assert {p["id"] for p in both} == each[first] | each[second]
    assert {p["device_id"] for p in both} == {first, second}


def test_the_adapter_reads_the_ports_of_many_routers_in_one_call(
    conn: Any, api: Api, ha_router: Any
) -> None:
    from l3ha.cloud.adapter import NeutronCloud

    routers = [ha_router(1)[0] for _ in range(3)]
    ports = NeutronCloud(conn).ports_of_routers(routers)
    for router in routers:
        expected = {p["id"] for p in api.get(f"/v2.0/ports?device_id={router}").json()["ports"]}
        assert expected and {p.id for p in ports[router]} == expected
