"""Contract: networks and subnets as the DHCP code reads them, and deleting a DHCP network.

Held against both backends with raw HTTP. A subnet made before the network is on a test's
own agent has ``enable_dhcp`` false, so that no backend schedules it onto the DHCP agents
other tests own; a DHCP port needs a DHCP-enabled subnet, made once the network is bound.
"""

from __future__ import annotations

import uuid
from typing import Any

from tests.contract.contract_dhcp import (
    add,
    add_dhcp_subnet,
    dhcp_ports,
    hosting_ids,
    network_ids,
)
from tests.contract.contract_http import Api


def test_a_new_network_has_no_subnet_and_no_dhcp_agent(api: Api, new_network: Any) -> None:
    network = new_network()
    doc = api.get(f"/v2.0/networks/{network}").json()["network"]
    assert (doc["subnets"], doc["status"], doc["admin_state_up"]) == ([], "ACTIVE", True)
    assert (doc["availability_zone_hints"], doc["availability_zones"]) == ([], [])
    assert hosting_ids(api, network) == set()


def test_a_subnet_is_created_listed_and_filtered(api: Api, new_network: Any) -> None:
    network = new_network()
    body = {
        "subnet": {
            "network_id": network,
            "cidr": "10.231.7.0/24",
            "ip_version": 4,
            "enable_dhcp": False,
            "name": "contract-subnet",
        }
    }
    reply = api.post("/v2.0/subnets", body)
    assert reply.status == 201, reply.text
    subnet = reply.json()["subnet"]
    assert (subnet["network_id"], subnet["cidr"], subnet["enable_dhcp"]) == (
        network,
        "10.231.7.0/24",
        False,
    )
    assert (subnet["gateway_ip"], subnet["ip_version"], subnet["name"]) == (
        "10.231.7.1",
        4,
        "contract-subnet",
    )
    listed = api.get(f"/v2.0/subnets?network_id={network}").json()["subnets"]
    assert [s["id"] for s in listed] == [subnet["id"]]
    no_dhcp = api.get(f"/v2.0/subnets?network_id={network}&enable_dhcp=False").json()
    assert [s["id"] for s in no_dhcp["subnets"]] == [subnet["id"]]
    dhcp = api.get(f"/v2.0/subnets?network_id={network}&enable_dhcp=True").json()
    assert dhcp["subnets"] == []
    assert api.get(f"/v2.0/networks/{network}").json()["network"]["subnets"] == [subnet["id"]]
    assert hosting_ids(api, network) == set()


def test_deleting_a_network_takes_its_dhcp_bindings_and_ports(
    api: Api, backend: Any, new_network: Any
) -> None:
    agent, network = backend.new_dhcp_agent(), new_network()
    add(api, agent.id, network)
    add_dhcp_subnet(api, network)
    backend.dhcp_setup(agent, network)
    assert len(dhcp_ports(api, network)) == 1
    assert hosting_ids(api, network) == {agent.id}
    reply = api.delete(f"/v2.0/networks/{network}")
    assert (reply.status, reply.text) == (204, "")
    gone = api.get(f"/v2.0/networks/{network}")
    assert (gone.status, gone.error_type()) == (404, "NetworkNotFound")
    assert hosting_ids(api, network) == set()
    assert network_ids(api, agent.id) == []
    assert dhcp_ports(api, network) == []


def test_deleting_an_unknown_network_is_404(api: Api) -> None:
    reply = api.delete(f"/v2.0/networks/{uuid.uuid4()}")
    assert (reply.status, reply.error_type()) == (404, "NetworkNotFound")
