"""Raw HTTP helpers for the DHCP contract rows; performs HTTP on loopback."""

from __future__ import annotations

import itertools
from typing import Any

from tests.contract.contract_http import Api, Reply


def create_network(api: Api, name: str, number: int) -> str:
    """POST /v2.0/networks (flat, on physical network ``contract-<number>``); its id."""
    body = {
        "network": {
            "name": name,
            "provider:network_type": "flat",
            "provider:physical_network": f"contract-{number}",
        }
    }
    reply = api.post("/v2.0/networks", body)
    if reply.status != 201:
        raise AssertionError(f"creating network {name}: {reply.status} {reply.text}")
    return str(reply.json()["network"]["id"])


_subnet_numbers = itertools.count(1)


def add_dhcp_subnet(api: Api, network_id: str) -> str:
    """POST /v2.0/subnets: a DHCP-enabled IPv4 /24 (10.232.N.0, N new each call); its id.

    Real DHCP agents make a port only for a network with a DHCP-enabled subnet. Create it
    once the network is on the test's own agent: Neutron then schedules it nowhere else.
    """
    number = next(_subnet_numbers)
    body = {
        "subnet": {
            "network_id": network_id,
            "cidr": f"10.232.{number}.0/24",
            "ip_version": 4,
            "enable_dhcp": True,
        }
    }
    reply = api.post("/v2.0/subnets", body)
    if reply.status != 201:
        raise AssertionError(f"DHCP subnet on {network_id}: {reply.status} {reply.text}")
    return str(reply.json()["subnet"]["id"])


def add(api: Api, agent_id: str, network_id: str) -> Reply:
    return api.post(f"/v2.0/agents/{agent_id}/dhcp-networks", {"network_id": network_id})


def remove(api: Api, agent_id: str, network_id: str) -> Reply:
    return api.delete(f"/v2.0/agents/{agent_id}/dhcp-networks/{network_id}")


def hosting_ids(api: Api, network_id: str) -> set[str]:
    reply = api.get(f"/v2.0/networks/{network_id}/dhcp-agents")
    if reply.status != 200:
        raise AssertionError(f"dhcp-agents of {network_id}: {reply.status} {reply.text}")
    return {agent["id"] for agent in reply.json()["agents"]}


def network_ids(api: Api, agent_id: str) -> list[str]:
    reply = api.get(f"/v2.0/agents/{agent_id}/dhcp-networks")
    if reply.status != 200:
        raise AssertionError(f"dhcp-networks of {agent_id}: {reply.status} {reply.text}")
    return [network["id"] for network in reply.json()["networks"]]


def dhcp_ports(api: Api, network_id: str) -> list[dict[str, Any]]:
    reply = api.get(f"/v2.0/ports?network_id={network_id}&device_owner=network:dhcp")
    if reply.status != 200:
        raise AssertionError(f"DHCP ports of {network_id}: {reply.status} {reply.text}")
    return list(reply.json()["ports"])
