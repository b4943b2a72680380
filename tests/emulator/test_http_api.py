"""The emulator's Neutron API over raw HTTP: discovery, lists, agents, scheduler, tags, ports."""

from __future__ import annotations

import http.client
import re
import urllib.parse

from l3ha.clock import ManualClock

from .conftest import Http, make

AGENT_TIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def neutron_error(doc: object, kind: str) -> str:
    assert isinstance(doc, dict)
    err = doc["NeutronError"]
    assert err["type"] == kind
    assert err["detail"] == ""
    return str(err["message"])


def test_discovery_href_follows_host_header(api: Http) -> None:
    status, doc, _ = api.call("GET", "/", headers={"Host": "127.0.0.9:1234"})
    assert status == 200
    assert doc == {"versions": [{"id": "v2.0", "status": "CURRENT", "links": [
        {"rel": "self", "href": "http://127.0.0.9:1234/v2.0/"}]}]}


def test_resource_index_and_unslashed_version_is_404(api: Http) -> None:
    status, doc = api.get("/v2.0/")
    assert status == 200
    assert {r["collection"] for r in doc["resources"]} >= {"agents", "routers", "ports"}
    status, doc = api.get("/v2.0")
    assert status == 404
    neutron_error(doc, "HTTPNotFound")


def test_unknown_paths_and_wrong_methods_are_neutrons_404(api: Http) -> None:
    agent_id, router_id = api.agent_id("net-1"), api.get("/v2.0/routers")[1]["routers"][0]["id"]
    for method, path in [("DELETE", "/v2.0/ports"), ("PATCH", "/v2.0/routers"),
                         ("POST", f"/v2.0/routers/{router_id}/l3-agents"),
                         ("GET", f"/v2.0/routers/{router_id}/bogus"),
                         ("GET", f"/v2.0/agents/{agent_id}/l3-routers/{router_id}/extra"),
                         ("POST", "/v2.0/networks/n/dhcp-agents"), ("GET", "/v2.0/bogus")]:
        status, doc, _ = api.call(method, path)
        assert status == 404, (method, path)
        assert neutron_error(doc, "HTTPNotFound") == "The resource could not be found."


def test_json_suffix_is_accepted(api: Http) -> None:
    assert api.get("/v2.0/agents.json")[1] == api.get("/v2.0/agents")[1]
    agent_id = api.agent_id("net-1")
    status, doc = api.get(f"/v2.0/agents/{agent_id}.json")
    assert status == 200 and doc["agent"]["host"] == "net-1"


def test_extensions_list_the_aliases_clients_look_for(api: Http) -> None:
    aliases = {e["alias"] for e in api.get("/v2.0/extensions")[1]["extensions"]}
    assert aliases >= {"agent", "l3_agent_scheduler", "router", "l3-ha", "dvr",
                       "availability_zone", "router_availability_zone", "standard-attr-tag"}
    status, doc = api.get("/v2.0/extensions/l3-ha")
    assert status == 200 and doc["extension"]["alias"] == "l3-ha"


def test_agent_fields_and_timestamp_formats(api: Http) -> None:
    agents = api.get("/v2.0/agents", agent_type="L3 agent")[1]["agents"]
    assert [a["host"] for a in agents] == ["net-1", "net-2", "net-3", "net-4"]
    agent = agents[0]
    assert agent["binary"] == "neutron-l3-agent" and agent["topic"] == "l3_agent"
    assert agent["availability_zone"] == "az1" and agents[1]["availability_zone"] == "az2"
    assert agent["resources_synced"] is None and agent["alive"] is True
    for key in ("created_at", "started_at", "heartbeat_timestamp"):
        assert AGENT_TIME.match(agent[key]), agent[key]
    config = agent["configurations"]
    assert config["agent_mode"] == "legacy"
    assert {"routers", "ex_gw_ports", "interfaces", "floating_ips"} <= set(config)
    assert sum(a["configurations"]["routers"] for a in agents) == 8 + 2  # HA: two replicas


def test_agent_filters_or_values_and_unknown_key(api: Http) -> None:
    hosts = [a["host"] for a in api.get("/v2.0/agents", host=["net-1", "net-3"],
                                              binary="neutron-l3-agent")[1]["agents"]]
    assert sorted(hosts) == ["net-1", "net-3"]
    assert len(api.get("/v2.0/agents", alive="true", agent_type="L3 agent")[1]["agents"]) == 4
    assert api.get("/v2.0/agents", alive="false")[1]["agents"] == []
    dhcp = api.get("/v2.0/agents", agent_type="DHCP agent")[1]["agents"]
    assert [a["binary"] for a in dhcp] == ["neutron-dhcp-agent"]
    status, doc = api.get("/v2.0/agents", foo="1")
    assert status == 400
    assert neutron_error(doc, "HTTPBadRequest") == "['foo'] is invalid attribute for filtering"


def test_fields_limit_attributes(api: Http) -> None:
    agents = api.get("/v2.0/agents", fields=["id", "host"])[1]["agents"]
    assert all(set(a) == {"id", "host"} for a in agents)


def test_sorting(api: Http) -> None:
    hosts = [a["host"] for a in api.get("/v2.0/agents", sort_key="host", sort_dir="desc",
                                        binary="neutron-l3-agent")[1]["agents"]]
    assert hosts == ["net-4", "net-3", "net-2", "net-1"]
    status, doc = api.get("/v2.0/agents", sort_key="alive", sort_dir="asc")
    assert status == 400
    assert neutron_error(doc, "BadRequest") == (
        "Bad agents request: 'alive' is an invalid attribute for sort key.")
    status, doc = api.get("/v2.0/agents", sort_key="configurations", sort_dir="asc")
    assert status == 400
    assert neutron_error(doc, "HTTPBadRequest") == (
        "['configurations'] is invalid attribute for sort_keys")
    status, doc = api.get("/v2.0/agents", sort_key="host", sort_dir="up")
    assert status == 400 and "['up'] is invalid value for sort_dirs" in neutron_error(
        doc, "HTTPBadRequest")
    names = [r["name"] for r in api.get("/v2.0/routers", sort_key="name",
                                         sort_dir="desc")[1]["routers"]]
    assert names == sorted(names, reverse=True)


def test_pagination_follows_next_links_through_everything(api: Http) -> None:
    seen: list[str] = []
    path = "/v2.0/agents?limit=2"
    for _ in range(10):
        status, doc = api.get(path)
        assert status == 200
        seen += [a["id"] for a in doc["agents"]]
        nxt = [link["href"] for link in doc.get("agents_links", []) if link["rel"] == "next"]
        if not nxt:
            break
        split = urllib.parse.urlsplit(nxt[0])
        assert dict(urllib.parse.parse_qsl(split.query))["marker"] == doc["agents"][-1]["id"]
        path = f"{split.path}?{split.query}"
    all_ids = [a["id"] for a in api.get("/v2.0/agents")[1]["agents"]]
    assert seen == sorted(all_ids)
    last = sorted(all_ids)[-1]
    back = api.get("/v2.0/agents", limit=2, marker=last, page_reverse="True")[1]["agents"]
    assert [a["id"] for a in back] == sorted(all_ids)[-3:-1]
    unknown = "00000000-0000-4000-8000-000000000000"
    first = api.get("/v2.0/agents", limit=2)[1]["agents"]
    assert api.get("/v2.0/agents", limit=2, marker=unknown)[1]["agents"] == first
    status, doc = api.get("/v2.0/routers", limit=2, marker=unknown)
    assert status == 404
    neutron_error(doc, "RouterNotFound")
    status, doc = api.get("/v2.0/ports", limit=2, marker=unknown)
    assert status == 404
    neutron_error(doc, "PortNotFound")
    status, doc = api.get("/v2.0/agents", limit="x")
    assert status == 400 and "Limit must be an integer" in neutron_error(doc, "BadRequest")


def test_agent_update_only_admin_state_and_description(api: Http) -> None:
    agent_id = api.agent_id("net-2")
    status, doc, _ = api.call("PUT", f"/v2.0/agents/{agent_id}",
                               {"agent": {"admin_state_up": False, "description": "maint"}})
    assert status == 200
    assert doc["agent"]["admin_state_up"] is False and doc["agent"]["description"] == "maint"
    status, doc, _ = api.call("PUT", f"/v2.0/agents/{agent_id}", {"agent": {"host": "x"}})
    assert status == 400
    neutron_error(doc, "HTTPBadRequest")
    status, doc, _ = api.call("PUT", f"/v2.0/agents/{agent_id}",
                              {"agent": {"description": "x" * 256}})
    assert status == 400 and "exceeds maximum length of 255" in neutron_error(
        doc, "HTTPBadRequest")
    status, doc, _ = api.call("PUT", f"/v2.0/agents/{agent_id}",
                              {"agent": {"admin_state_up": "maybe"}})
    assert status == 400
    assert neutron_error(doc, "InvalidInput") == (
        "Invalid input for operation: 'maybe' cannot be converted to boolean.")
    status, doc, _ = api.call("PUT", f"/v2.0/agents/{agent_id}", {})
    assert status == 400
    assert neutron_error(doc, "HTTPBadRequest") == "Resource body required"
    status, doc = api.get("/v2.0/agents/00000000-0000-4000-8000-000000000000")
    assert status == 404 and "could not be found" in neutron_error(doc, "AgentNotFound")


def routers_by_name(api: Http) -> dict[str, dict]:
    return {r["name"]: r for r in api.get("/v2.0/routers")[1]["routers"]}


def raw_post(api: Http, path: str, body: str) -> tuple[int, bytes]:
    conn = http_conn(api)
    conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    return resp.status, resp.read()


def http_conn(api: Http) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", api.emu.port, timeout=10)


def test_bind_answers_201_null_and_is_idempotent(api: Http) -> None:
    router = routers_by_name(api)["router-0004"]  # legacy, on net-4
    net4 = api.agent_id("net-4")
    status, body = raw_post(api, f"/v2.0/agents/{net4}/l3-routers",
                            f'{{"router_id": "{router["id"]}"}}')
    assert (status, body) == (201, b"null")
    net1 = api.agent_id("net-1")
    status, doc, _ = api.call("POST", f"/v2.0/agents/{net1}/l3-routers",
                               {"router_id": router["id"]})
    assert status == 409
    message = neutron_error(doc, "RouterHostedByL3Agent")
    assert net4 in message and router["id"] in message


def test_bind_check_order_and_codes(api: Http) -> None:
    router = routers_by_name(api)["router-0005"]
    unknown = "00000000-0000-4000-8000-000000000000"
    status, doc, _ = api.call("POST", f"/v2.0/agents/{unknown}/l3-routers",
                               {"router_id": unknown})
    assert status == 404
    neutron_error(doc, "RouterNotFound")
    status, doc, _ = api.call("POST", f"/v2.0/agents/{unknown}/l3-routers",
                               {"router_id": router["id"]})
    assert status == 404
    neutron_error(doc, "AgentNotFound")
    dhcp = api.get("/v2.0/agents", agent_type="DHCP agent")[1]["agents"][0]["id"]
    status, doc, _ = api.call("POST", f"/v2.0/agents/{dhcp}/l3-routers",
                               {"router_id": router["id"]})
    assert status == 404
    neutron_error(doc, "InvalidL3Agent")
    net2 = api.agent_id("net-2")
    api.call("PUT", f"/v2.0/agents/{net2}", {"agent": {"admin_state_up": False}})
    status, doc, _ = api.call("POST", f"/v2.0/agents/{net2}/l3-routers",
                               {"router_id": router["id"]})
    assert status == 404
    assert "is not a L3 Agent or has been disabled" in neutron_error(doc, "InvalidL3Agent")


def test_unbind_is_idempotent_and_404_for_unknown_router(api: Http) -> None:
    router = routers_by_name(api)["router-0003"]  # legacy on net-3
    net3, net1 = api.agent_id("net-3"), api.agent_id("net-1")
    assert api.call("DELETE", f"/v2.0/agents/{net1}/l3-routers/{router['id']}")[0] == 204
    status, body, _ = api.call("DELETE", f"/v2.0/agents/{net3}/l3-routers/{router['id']}")
    assert (status, body) == (204, None)
    assert api.get(f"/v2.0/routers/{router['id']}/l3-agents")[1]["agents"] == []
    status, doc, _ = api.call("DELETE", f"/v2.0/agents/{net3}/l3-routers/{net3}")
    assert status == 404
    neutron_error(doc, "RouterNotFound")
    status, doc, _ = api.call("PUT", f"/v2.0/agents/{net3}/l3-routers/{router['id']}", {})
    assert status == 501
    assert doc == {"NotImplementedError": {
        "type": "NotImplementedError", "detail": "",
        "message": "Updating a router in an L3 agent is not supported for this backend"}}


def test_l3_agents_carry_ha_state_and_extra_fields(api: Http) -> None:
    routers = routers_by_name(api)
    ha = api.get(f"/v2.0/routers/{routers['router-0001']['id']}/l3-agents")[1]["agents"]
    assert [(a["host"], a["ha_state"]) for a in ha] == [("net-1", "active"),
                                                        ("net-2", "standby")]
    assert all(a["resource_versions"] == {} and a["ha_chassis_priority"] is None for a in ha)
    legacy = api.get(f"/v2.0/routers/{routers['router-0003']['id']}/l3-agents")[1]["agents"]
    assert [(a["host"], a["ha_state"]) for a in legacy] == [("net-3", None)]
    hosted = api.get(f"/v2.0/agents/{api.agent_id('net-3')}/l3-routers")[1]["routers"]
    assert routers["router-0003"]["id"] in {r["id"] for r in hosted}


def test_ha_router_gains_a_binding(api: Http) -> None:
    router = routers_by_name(api)["router-0001"]  # HA on net-1, net-2
    net3 = api.agent_id("net-3")
    status, _, _ = api.call("POST", f"/v2.0/agents/{net3}/l3-routers",
                             {"router_id": router["id"]})
    assert status == 201
    hosts = [a["host"] for a in
             api.get(f"/v2.0/routers/{router['id']}/l3-agents")[1]["agents"]]
    assert hosts == ["net-1", "net-2", "net-3"]
    ha_ports = api.get("/v2.0/ports", device_id=router["id"],
                        device_owner="network:router_ha_interface")[1]["ports"]
    assert sorted(p["binding:host_id"] for p in ha_ports) == ["net-1", "net-2", "net-3"]


def test_router_fields_filters_and_show(api: Http) -> None:
    router = routers_by_name(api)["router-0001"]
    assert router["ha"] is True and router["distributed"] is False
    assert router["status"] == "ACTIVE" and router["availability_zones"] == ["az1", "az2"]
    assert ISO_Z.match(router["created_at"]) and ISO_Z.match(router["updated_at"])
    for key in ("ha", "distributed", "status", "flavor_id"):
        status, doc = api.get("/v2.0/routers", **{key: "x"})
        assert status == 400
        message = neutron_error(doc, "HTTPBadRequest")
        assert message == f"['{key}'] is invalid attribute for filtering"
    busy = api.get("/v2.0/routers", tags="l3ha:busy")[1]["routers"]
    assert len(busy) == 1
    status, doc = api.get("/v2.0/routers/nope")
    assert status == 404
    assert neutron_error(doc, "RouterNotFound") == "Router nope could not be found"


def test_router_tags(api: Http) -> None:
    router_id = routers_by_name(api)["router-0006"]["id"]
    base = f"/v2.0/routers/{router_id}/tags"
    assert api.call("PUT", f"{base}/l3ha:weight=5")[0] == 201
    assert api.get(base)[1] == {"tags": ["l3ha:weight=5"]}
    assert api.call("GET", f"{base}/l3ha:weight=5")[0] == 204
    status, doc, _ = api.call("GET", f"{base}/other")
    assert status == 404
    neutron_error(doc, "TagNotFound")
    assert api.call("PUT", base, {"tags": ["a", "b"]})[1] == {"tags": ["a", "b"]}
    assert [r["id"] for r in api.get("/v2.0/routers", tags="a,b")[1]["routers"]] == [router_id]
    assert api.call("DELETE", f"{base}/a")[0] == 204
    assert api.get(base)[1] == {"tags": ["b"]}


def test_ports_filters(api: Http) -> None:
    router = routers_by_name(api)["router-0001"]
    owners = ["network:router_gateway", "network:ha_router_replicated_interface"]
    ports = api.get("/v2.0/ports", device_id=router["id"], device_owner=owners)[1]["ports"]
    assert {p["device_owner"] for p in ports} == set(owners)
    assert all(p["status"] == "ACTIVE" and p["binding:host_id"] == "net-1" for p in ports)
    assert all(ISO_Z.match(p["created_at"]) for p in ports)
    on_net2 = api.get("/v2.0/ports", **{"binding:host_id": "net-2",
                                         "device_owner": "network:router_ha_interface"})
    assert {p["device_id"] for p in on_net2[1]["ports"]} == {
        r["id"] for r in api.get("/v2.0/routers")[1]["routers"] if r["ha"]}
    assert api.get("/v2.0/ports", status="BUILD")[1]["ports"] == []


def test_networks_floatingips_and_router_lifecycle(api: Http) -> None:
    public = api.get("/v2.0/networks", **{"router:external": "true"})[1]["networks"]
    assert [n["name"] for n in public] == ["public"]
    fips = api.get("/v2.0/floatingips")[1]["floatingips"]
    assert fips and all(f["floating_network_id"] == public[0]["id"] for f in fips)
    status, doc, _ = api.call("POST", "/v2.0/routers", {"router": {
        "name": "new", "external_gateway_info": {"network_id": public[0]["id"]}}})
    assert status == 201 and doc["router"]["name"] == "new"
    assert api.call("DELETE", f"/v2.0/routers/{doc['router']['id']}")[:2] == (204, None)
    busy_router = routers_by_name(api)["router-0003"]["id"]
    status, doc, _ = api.call("DELETE", f"/v2.0/routers/{busy_router}")
    assert status == 409
    neutron_error(doc, "RouterInUse")


def test_every_api_error_is_a_neutron_error(api: Http) -> None:
    for method, path in [("GET", "/v2.0/nothing"), ("GET", "/v2.0/ports/x"),
                         ("GET", "/v2.0/networks/x"), ("DELETE", "/v2.0/agents/x")]:
        status, doc, _ = api.call(method, path)
        assert status == 404 and "NeutronError" in doc, path
    status, doc, _ = api.call("POST", "/v2.0/agents", {"agent": {}})
    assert status == 400 and "Agent creation using API is not supported" in neutron_error(
        doc, "BadRequest")
    status, doc = api.get("/v2.0/availability_zones", fields="id")
    assert status == 200
    assert {"name": "az1", "resource": "router", "state": "available"} in doc["availability_zones"]


def test_ha_router_created_through_the_api_is_scheduled(api: Http) -> None:
    status, doc, _ = api.call("POST", "/v2.0/routers", {"router": {"name": "h", "ha": True}})
    assert status == 201
    rid = doc["router"]["id"]
    agents = api.get(f"/v2.0/routers/{rid}/l3-agents")[1]["agents"]
    assert len(agents) == 3 and {a["ha_state"] for a in agents} == {"standby"}
    api.emu.advance(12)  # 2 s processing + 7 s takeover + 2 s ha_vrrp_advert_int report delay
    states = sorted(a["ha_state"] for a in api.get(f"/v2.0/routers/{rid}/l3-agents")[1]["agents"])
    assert states == ["active", "standby", "standby"]
    status, doc, _ = api.call("PUT", f"/v2.0/routers/{rid}", {"router": {"ha": False}})
    assert status == 400
    assert "Cannot change HA attribute of active routers" in neutron_error(doc, "BadRequest")


def test_dvr_binding_rules(clock: ManualClock) -> None:
    with make(clock, agents=2, routers=3, dvr_routers=1) as emu:
        api = Http(emu)
        ids = emu.agent_ids_by_host()
        dvr_router = next(r for r in api.get("/v2.0/routers")[1]["routers"] if r["distributed"])
        legacy = next(r for r in api.get("/v2.0/routers")[1]["routers"] if not r["distributed"])
        status, doc, _ = api.call("POST", f"/v2.0/agents/{ids['net-1']}/l3-routers",
                                  {"router_id": dvr_router["id"]})
        assert status == 409
        neutron_error(doc, "RouterL3AgentMismatch")
        status, doc, _ = api.call("POST", f"/v2.0/agents/{ids['compute-1']}/l3-routers",
                                  {"router_id": legacy["id"]})
        assert status == 409
        neutron_error(doc, "DVRL3CannotAssignToDvrAgent")
        hosts = [a["host"] for a in
                 api.get(f"/v2.0/routers/{dvr_router['id']}/l3-agents")[1]["agents"]]
        assert hosts == ["snat-1"]
        modes = {a["host"]: a["configurations"]["agent_mode"]
                 for a in api.get("/v2.0/agents")[1]["agents"]}
        assert modes == {"net-1": "legacy", "net-2": "legacy", "snat-1": "dvr_snat",
                         "snat-2": "dvr_snat", "compute-1": "dvr"}
