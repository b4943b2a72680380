"""The emulator's DHCP API: the dhcp-networks / dhcp-agents shims, networks and DHCP ports."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from l3ha.clock import ManualClock
from l3ha.emulator import Emulator
from l3ha.emulator.dhcp_world import RESERVED_DEVICE_ID, dhcp_device_id

from .conftest import Http, make


@pytest.fixture
def emu(clock: ManualClock) -> Iterator[Emulator]:
    """3 nodes net-1..3 with an L3 and a DHCP agent each, 2 AZs, 6 tenant networks."""
    with make(clock, agents=3, routers=3, azs=2, dhcp_agents=3, networks=6) as emulator:
        yield emulator


@pytest.fixture
def http(emu: Emulator) -> Http:
    return Http(emu)


def dhcp_ids(http: Http) -> dict[str, str]:
    status, doc = http.get("/v2.0/agents", agent_type="DHCP agent")
    assert status == 200
    return {a["host"]: a["id"] for a in doc["agents"]}


def networks_of(http: Http, agent_id: str) -> list[str]:
    status, doc = http.get(f"/v2.0/agents/{agent_id}/dhcp-networks")
    assert status == 200
    return [n["id"] for n in doc["networks"]]


def hosts_of(http: Http, network_id: str) -> list[str]:
    status, doc = http.get(f"/v2.0/networks/{network_id}/dhcp-agents")
    assert status == 200
    return sorted(a["host"] for a in doc["agents"])


def dhcp_ports(http: Http, network_id: str) -> list[dict[str, Any]]:
    status, doc = http.get("/v2.0/ports", network_id=network_id, device_owner="network:dhcp")
    assert status == 200
    return list(doc["ports"])


def add(http: Http, agent_id: str, network_id: str) -> tuple[int, Any]:
    status, doc, _ = http.call(
        "POST", f"/v2.0/agents/{agent_id}/dhcp-networks", {"network_id": network_id}
    )
    return status, doc


def remove(http: Http, agent_id: str, network_id: str) -> tuple[int, Any]:
    status, doc, _ = http.call("DELETE", f"/v2.0/agents/{agent_id}/dhcp-networks/{network_id}")
    return status, doc


def test_dhcp_agents_share_the_l3_agents_nodes_and_report_their_networks(http: Http) -> None:
    status, doc = http.get("/v2.0/agents", agent_type="DHCP agent")
    assert status == 200
    agents = {a["host"]: a for a in doc["agents"]}
    assert sorted(agents) == ["net-1", "net-2", "net-3"]
    l3 = {a["host"]: a for a in http.get("/v2.0/agents", agent_type="L3 agent")[1]["agents"]}
    for host, agent in agents.items():
        assert (agent["binary"], agent["topic"]) == ("neutron-dhcp-agent", "dhcp_agent")
        assert agent["availability_zone"] == l3[host]["availability_zone"]
        assert agent["configurations"]["networks"] == 2
        assert agent["configurations"]["subnets"] == 2
        assert agent["configurations"]["ports"] == 2  # one DHCP port on each of its networks
        assert len(networks_of(http, agent["id"])) == 2


def test_every_built_network_has_one_active_dhcp_port_of_its_agent(http: Http) -> None:
    ids = dhcp_ids(http)
    for host, agent_id in ids.items():
        for net in networks_of(http, agent_id):
            (port,) = dhcp_ports(http, net)
            assert port["device_id"] == dhcp_device_id(net, host)
            assert port["device_id"] == f"dhcp{uuid.uuid5(uuid.NAMESPACE_DNS, host)}-{net}"
            assert (port["binding:host_id"], port["status"]) == (host, "ACTIVE")
            assert port["fixed_ips"][0]["subnet_id"]


def test_add_answers_201_null_and_the_port_goes_build_then_active(
    http: Http, emu: Emulator
) -> None:
    ids = dhcp_ids(http)
    net = networks_of(http, ids["net-1"])[0]
    assert add(http, ids["net-2"], net) == (201, None)
    assert hosts_of(http, net) == ["net-1", "net-2"]
    new = [p for p in dhcp_ports(http, net) if p["binding:host_id"] == "net-2"]
    assert [p["status"] for p in new] == ["BUILD"]
    emu.advance(emu.cfg.dhcp_network_time + 0.1)
    new = [p for p in dhcp_ports(http, net) if p["binding:host_id"] == "net-2"]
    assert [(p["status"], p["device_id"]) for p in new] == [
        ("ACTIVE", dhcp_device_id(net, "net-2"))
    ]


def test_remove_reserves_the_port_and_the_next_agent_claims_it(http: Http, emu: Emulator) -> None:
    ids = dhcp_ids(http)
    net = networks_of(http, ids["net-1"])[0]
    (old,) = dhcp_ports(http, net)
    status, _ = remove(http, ids["net-1"], net)
    assert status == 204
    assert hosts_of(http, net) == []
    (reserved,) = dhcp_ports(http, net)
    assert reserved["id"] == old["id"]
    assert (reserved["device_id"], reserved["binding:host_id"]) == (RESERVED_DEVICE_ID, "net-1")
    assert reserved["status"] == "DOWN"  # the live agent tore it down
    add(http, ids["net-3"], net)
    emu.advance(emu.cfg.dhcp_network_time + 0.1)
    (claimed,) = dhcp_ports(http, net)
    assert claimed["id"] == old["id"]
    assert (claimed["device_id"], claimed["binding:host_id"], claimed["status"]) == (
        dhcp_device_id(net, "net-3"),
        "net-3",
        "ACTIVE",
    )


def test_scheduler_error_codes_match_neutron(http: Http) -> None:
    ids = dhcp_ids(http)
    net = networks_of(http, ids["net-1"])[0]
    unknown = str(uuid.uuid4())
    l3_agent = http.agent_id("net-1")
    cases = {
        "twice": add(http, ids["net-1"], net),
        "unknown network": add(http, ids["net-1"], unknown),
        "both unknown": add(http, unknown, unknown),
        "unknown agent": add(http, unknown, net),
        "l3 agent": add(http, l3_agent, net),
        "remove not hosted": remove(http, ids["net-2"], net),
        "remove unknown network": remove(http, ids["net-2"], unknown),
        "remove unknown agent": remove(http, unknown, net),
        "remove from l3 agent": remove(http, l3_agent, net),
    }
    kinds = {name: (status, doc["NeutronError"]["type"]) for name, (status, doc) in cases.items()}
    assert kinds == {
        "twice": (409, "NetworkHostedByDHCPAgent"),
        "unknown network": (404, "NetworkNotFound"),
        "both unknown": (404, "NetworkNotFound"),
        "unknown agent": (404, "AgentNotFound"),
        "l3 agent": (404, "InvalidDHCPAgent"),
        "remove not hosted": (409, "NetworkNotHostedByDhcpAgent"),
        "remove unknown network": (409, "NetworkNotHostedByDhcpAgent"),
        "remove unknown agent": (404, "AgentNotFound"),
        "remove from l3 agent": (409, "NetworkNotHostedByDhcpAgent"),
    }
    assert hosts_of(http, net) == ["net-1"]
    assert http.get(f"/v2.0/networks/{unknown}/dhcp-agents") == (200, {"agents": []})
    assert http.get(f"/v2.0/agents/{unknown}/dhcp-networks")[0] == 404
    assert http.get(f"/v2.0/agents/{l3_agent}/dhcp-networks") == (200, {"networks": []})


def test_disabled_agent_is_refused_and_drops_its_ports_but_keeps_bindings(
    http: Http, emu: Emulator
) -> None:
    ids = dhcp_ids(http)
    hosted = networks_of(http, ids["net-2"])
    other = networks_of(http, ids["net-1"])[0]
    http.call("PUT", f"/v2.0/agents/{ids['net-2']}", {"agent": {"admin_state_up": False}})
    status, doc = add(http, ids["net-2"], other)
    assert (status, doc["NeutronError"]["type"]) == (404, "InvalidDHCPAgent")
    assert networks_of(http, ids["net-2"]) == hosted
    assert all(dhcp_ports(http, net) == [] for net in hosted)  # release_dhcp_port deleted them
    http.call("PUT", f"/v2.0/agents/{ids['net-2']}", {"agent": {"admin_state_up": True}})
    emu.advance(emu.cfg.dhcp_network_time + 0.1)
    for net in hosted:
        assert [p["status"] for p in dhcp_ports(http, net)] == ["ACTIVE"]


def test_dead_agent_accepts_a_network_that_waits_for_its_resync(http: Http, emu: Emulator) -> None:
    ids = dhcp_ids(http)
    net = networks_of(http, ids["net-1"])[0]
    emu.faults.kill_agent("net-3")
    emu.advance(emu.cfg.agent_down_time + emu.cfg.report_interval)
    assert add(http, ids["net-3"], net) == (201, None)
    assert not [p for p in dhcp_ports(http, net) if p["binding:host_id"] == "net-3"]
    emu.faults.revive_agent("net-3")
    emu.advance(2 * emu.cfg.dhcp_network_time + 0.1)
    mine = [p for p in dhcp_ports(http, net) if p["binding:host_id"] == "net-3"]
    assert [p["status"] for p in mine] == ["ACTIVE"]


def test_member_get_and_put_are_500_as_in_neutron(http: Http) -> None:
    ids = dhcp_ids(http)
    net = networks_of(http, ids["net-1"])[0]
    for method in ("GET", "PUT"):
        status, doc, _ = http.call(method, f"/v2.0/agents/{ids['net-1']}/dhcp-networks/{net}", {})
        assert (status, doc["NeutronError"]["type"]) == (500, "HTTPInternalServerError")
    status, doc, _ = http.call("POST", f"/v2.0/agents/{ids['net-1']}/dhcp-networks", {})
    assert status == 500


def test_networks_are_created_listed_filtered_and_shown(http: Http) -> None:
    status, doc, _ = http.call("POST", "/v2.0/networks", {"network": {"name": "made-by-api"}})
    assert status == 201
    made = doc["network"]
    assert (made["subnets"], made["availability_zones"], made["status"]) == ([], [], "ACTIVE")
    status, doc = http.get("/v2.0/networks", name="made-by-api", fields=["id", "name"])
    assert doc == {"networks": [{"id": made["id"], "name": "made-by-api"}]}
    assert http.get(f"/v2.0/networks/{made['id']}")[1]["network"]["id"] == made["id"]
    assert hosts_of(http, made["id"]) == []  # no DHCP subnet: nothing scheduled it
    status, doc = http.get("/v2.0/networks", name="tenant-net-0001")
    (tenant,) = doc["networks"]
    assert len(tenant["subnets"]) == 1
    assert len(tenant["availability_zones"]) == 1
    status, doc, _ = http.call("POST", "/v2.0/networks", {"network": {"color": "red"}})
    assert (status, doc["NeutronError"]["message"]) == (400, "Unrecognized attribute(s) 'color'")
    status, _, _ = http.call("POST", "/v2.0/networks", {"nothing": {}})
    assert status == 400


def test_dhcp_agent_scheduler_extension_is_listed(http: Http) -> None:
    status, doc = http.get("/v2.0/extensions/dhcp_agent_scheduler")
    assert status == 200
    assert doc["extension"]["alias"] == "dhcp_agent_scheduler"


def test_subnets_say_which_networks_need_dhcp(http: Http) -> None:
    status, doc = http.get("/v2.0/subnets", enable_dhcp="True")
    assert status == 200
    names = sorted(s["name"] for s in doc["subnets"])
    assert names == [f"tenant-net-{i:04d}-subnet" for i in range(1, 7)]
    status, doc = http.get("/v2.0/subnets", enable_dhcp="False")
    assert {s["name"] for s in doc["subnets"]} >= {"public-subnet"}
    (first,) = [s for s in http.get("/v2.0/subnets")[1]["subnets"] if s["enable_dhcp"]][:1]
    status, doc = http.get(f"/v2.0/subnets/{first['id']}", fields="cidr")
    assert (status, doc) == (200, {"subnet": {"cidr": first["cidr"]}})
    assert http.get(f"/v2.0/subnets/{uuid.uuid4()}")[1]["NeutronError"]["type"] == (
        "SubnetNotFound"
    )


def test_a_dhcp_subnet_schedules_an_api_network_to_the_least_loaded_agent(
    http: Http, emu: Emulator
) -> None:
    ids = dhcp_ids(http)
    remove(http, ids["net-3"], networks_of(http, ids["net-3"])[0])
    emu.advance(emu.cfg.report_interval)  # net-3 reports one network fewer: the least load
    _, doc, _ = http.call("POST", "/v2.0/networks", {"network": {"name": "vm-net"}})
    net = doc["network"]["id"]
    status, doc, _ = http.call(
        "POST", "/v2.0/subnets", {"subnet": {"network_id": net, "cidr": "10.99.1.0/24"}}
    )
    assert status == 201
    assert (doc["subnet"]["enable_dhcp"], doc["subnet"]["gateway_ip"]) == (True, "10.99.1.1")
    assert hosts_of(http, net) == ["net-3"]
    emu.advance(emu.cfg.dhcp_network_time + 0.1)
    (port,) = dhcp_ports(http, net)
    assert (port["binding:host_id"], port["status"]) == ("net-3", "ACTIVE")
    assert port["fixed_ips"][0]["ip_address"].startswith("10.99.1.")
    status, doc, _ = http.call(
        "POST", "/v2.0/subnets", {"subnet": {"network_id": net, "cidr": "10.99.2.0/24"}}
    )
    assert status == 400
    status, doc, _ = http.call(
        "POST",
        "/v2.0/subnets",
        {"subnet": {"network_id": str(uuid.uuid4()), "cidr": "10.0.0.0/24"}},
    )
    assert (status, doc["NeutronError"]["type"]) == (404, "NetworkNotFound")


def test_a_network_without_a_dhcp_subnet_gets_no_port_until_one_is_added(
    http: Http, emu: Emulator
) -> None:
    """Real DHCP agents make no port for a network without a DHCP-enabled subnet (seen on
    the real stack, docs/realstack.md); a DHCP subnet made later has its agent make one."""
    ids = dhcp_ids(http)
    _, doc, _ = http.call("POST", "/v2.0/networks", {"network": {"name": "no-dhcp-yet"}})
    net = doc["network"]["id"]
    assert add(http, ids["net-2"], net)[0] == 201
    emu.advance(3 * emu.cfg.dhcp_network_time)
    assert dhcp_ports(http, net) == []
    assert emu.sim.dhcp.served_by_live_agent(emu.world.networks[net])  # set up, nothing to serve
    status, _, _ = http.call(
        "POST", "/v2.0/subnets", {"subnet": {"network_id": net, "cidr": "10.99.3.0/24"}}
    )
    assert status == 201
    assert hosts_of(http, net) == ["net-2"]  # already hosted: scheduled nowhere else
    emu.advance(emu.cfg.dhcp_network_time + 0.1)
    (port,) = dhcp_ports(http, net)
    assert (port["binding:host_id"], port["status"]) == ("net-2", "ACTIVE")
    assert port["device_id"] == dhcp_device_id(net, "net-2")


def test_az_hints_steer_the_scheduler_and_unknown_zones_are_404(http: Http, emu: Emulator) -> None:
    ids = dhcp_ids(http)
    _, doc, _ = http.call(
        "POST",
        "/v2.0/networks",
        {"network": {"name": "in-az2", "availability_zone_hints": ["az2"]}},
    )
    net = doc["network"]
    assert net["availability_zone_hints"] == ["az2"]
    http.call("POST", "/v2.0/subnets", {"subnet": {"network_id": net["id"], "cidr": "10.9.9.0/24"}})
    assert hosts_of(http, net["id"]) == ["net-2"]  # the only DHCP agent in az2
    assert emu.world.dhcp.agents_by_host["net-2"].id == ids["net-2"]
    status, doc, _ = http.call(
        "POST", "/v2.0/networks", {"network": {"availability_zone_hints": ["az9"]}}
    )
    assert (status, doc["NeutronError"]["type"]) == (404, "AvailabilityZoneNotFound")


def test_dhcp_ports_by_network_match_the_full_listing(http: Http, emu: Emulator) -> None:
    ids = dhcp_ids(http)
    nets = networks_of(http, ids["net-1"]) + networks_of(http, ids["net-2"])[:1]
    add(http, ids["net-3"], nets[0])
    remove(http, ids["net-1"], nets[1])
    status, doc = http.get("/v2.0/ports", device_owner="network:dhcp", network_id=nets)
    assert status == 200
    fast = sorted((p["id"], p["device_id"], p["status"]) for p in doc["ports"])
    everything = http.get("/v2.0/ports")[1]["ports"]
    slow = sorted(
        (p["id"], p["device_id"], p["status"])
        for p in everything
        if p["device_owner"] == "network:dhcp" and p["network_id"] in nets
    )
    assert fast == slow and len(fast) == 4  # one added (BUILD), one reserved
    status, doc = http.get(
        "/v2.0/ports", device_owner="network:dhcp", network_id=nets, fields="id", status="BUILD"
    )
    assert [set(p) for p in doc["ports"]] == [{"id"}]


def test_a_network_with_router_ports_cannot_be_deleted(http: Http, emu: Emulator) -> None:
    public = emu.public.id
    status, doc, _ = http.call("DELETE", f"/v2.0/networks/{public}")
    assert (status, doc["NeutronError"]["type"]) == (409, "NetworkInUse")
    assert http.get(f"/v2.0/networks/{public}")[0] == 200


def test_deleting_a_network_a_cut_off_agent_serves_is_forgotten_at_its_resync(
    http: Http, emu: Emulator
) -> None:
    ids = dhcp_ids(http)
    net = networks_of(http, ids["net-1"])[0]
    emu.faults.mgmt_partition("net-1", 20)
    assert http.call("DELETE", f"/v2.0/networks/{net}")[0] == 204
    emu.advance(20 + emu.cfg.report_interval + 1)
    (agent,) = [
        a
        for a in http.get("/v2.0/agents", host="net-1")[1]["agents"]
        if a["agent_type"] == "DHCP agent"
    ]
    assert agent["configurations"]["networks"] == 1
