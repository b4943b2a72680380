"""Contract: the DHCP agent scheduler shims (dhcp-networks / dhcp-agents) and their checks.

Held against both backends with raw HTTP, because the exact codes and bodies are the
contract (the SDK hides them); docs/dhcp.md "What Neutron does" records these facts.
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
    remove,
)
from tests.contract.contract_http import Api

RESERVED = "reserved_dhcp_port"


def message(reply: Any) -> str:
    return str(reply.json()["NeutronError"]["message"])


def test_add_answers_201_with_a_json_null_body(api: Api, backend: Any, new_network: Any) -> None:
    agent, network = backend.new_dhcp_agent(), new_network()
    reply = add(api, agent.id, network)
    assert reply.status == 201
    assert reply.text.strip() == "null"
    assert hosting_ids(api, network) == {agent.id}
    assert network_ids(api, agent.id) == [network]


def test_add_twice_is_409_naming_network_and_agent(
    api: Api, backend: Any, new_network: Any
) -> None:
    agent, network = backend.new_dhcp_agent(), new_network()
    add(api, agent.id, network)
    reply = add(api, agent.id, network)
    assert (reply.status, reply.error_type()) == (409, "NetworkHostedByDHCPAgent")
    assert network in message(reply) and agent.id in message(reply)
    assert hosting_ids(api, network) == {agent.id}


def test_a_second_agent_may_be_added_beyond_dhcp_agents_per_network(
    api: Api, backend: Any, new_network: Any
) -> None:
    first, second, network = backend.new_dhcp_agent(), backend.new_dhcp_agent(), new_network()
    assert add(api, first.id, network).status == 201
    assert add(api, second.id, network).status == 201
    assert hosting_ids(api, network) == {first.id, second.id}


def test_remove_is_204_and_a_second_remove_is_409(
    api: Api, backend: Any, new_network: Any
) -> None:
    agent, network = backend.new_dhcp_agent(), new_network()
    add(api, agent.id, network)
    first = remove(api, agent.id, network)
    assert (first.status, first.text) == (204, "")
    assert hosting_ids(api, network) == set()
    second = remove(api, agent.id, network)
    assert (second.status, second.error_type()) == (409, "NetworkNotHostedByDhcpAgent")
    assert network in message(second) and agent.id in message(second)


def test_remove_a_network_hosted_by_another_agent_is_409(
    api: Api, backend: Any, new_network: Any
) -> None:
    host, other, network = backend.new_dhcp_agent(), backend.new_dhcp_agent(), new_network()
    add(api, host.id, network)
    reply = remove(api, other.id, network)
    assert (reply.status, reply.error_type()) == (409, "NetworkNotHostedByDhcpAgent")
    assert hosting_ids(api, network) == {host.id}


def test_unknown_agent_or_network(api: Api, backend: Any, new_network: Any) -> None:
    agent, network, unknown = backend.new_dhcp_agent(), new_network(), str(uuid.uuid4())
    replies = {
        "add unknown agent": add(api, unknown, network),
        "add unknown network": add(api, agent.id, unknown),
        "add both unknown": add(api, unknown, unknown),
        "remove unknown agent": remove(api, unknown, network),
        "remove unknown network": remove(api, agent.id, unknown),
        "networks of unknown agent": api.get(f"/v2.0/agents/{unknown}/dhcp-networks"),
    }
    assert {name: (r.status, r.error_type()) for name, r in replies.items()} == {
        "add unknown agent": (404, "AgentNotFound"),
        "add unknown network": (404, "NetworkNotFound"),
        "add both unknown": (404, "NetworkNotFound"),  # the network is checked first
        "remove unknown agent": (404, "AgentNotFound"),
        "remove unknown network": (409, "NetworkNotHostedByDhcpAgent"),
        "networks of unknown agent": (404, "AgentNotFound"),
    }
    agents_of_unknown = api.get(f"/v2.0/networks/{unknown}/dhcp-agents")
    assert (agents_of_unknown.status, agents_of_unknown.json()) == (200, {"agents": []})
    assert hosting_ids(api, network) == set()


def test_add_to_an_admin_down_agent_is_404_invalid_dhcp_agent(
    api: Api, backend: Any, new_network: Any
) -> None:
    agent, network = backend.new_dhcp_agent(), new_network()
    backend.set_admin_state(agent, False)
    reply = add(api, agent.id, network)
    assert (reply.status, reply.error_type()) == (404, "InvalidDHCPAgent")
    assert message(reply) == f"Agent {agent.id} is not a valid DHCP Agent or has been disabled."
    assert hosting_ids(api, network) == set()


def test_an_l3_agent_is_not_a_dhcp_agent(api: Api, backend: Any, new_network: Any) -> None:
    agent, network = backend.new_agent(), new_network()
    reply = add(api, agent.id, network)
    assert (reply.status, reply.error_type()) == (404, "InvalidDHCPAgent")
    removed = remove(api, agent.id, network)
    assert (removed.status, removed.error_type()) == (409, "NetworkNotHostedByDhcpAgent")
    listed = api.get(f"/v2.0/agents/{agent.id}/dhcp-networks")
    assert (listed.status, listed.json()) == (200, {"networks": []})


def test_add_to_a_dead_agent_is_accepted(api: Api, backend: Any, new_network: Any) -> None:
    agent, network = backend.new_dhcp_agent(), new_network()
    backend.kill_agent(agent)
    assert api.agent(agent.id)["alive"] is False
    assert add(api, agent.id, network).status == 201
    assert hosting_ids(api, network) == {agent.id}


def test_listings_carry_full_network_and_agent_dicts(
    api: Api, backend: Any, new_network: Any
) -> None:
    agent, network = backend.new_dhcp_agent(), new_network()
    add(api, agent.id, network)
    (listed,) = api.get(f"/v2.0/agents/{agent.id}/dhcp-networks").json()["networks"]
    assert {"id", "name", "status", "subnets", "admin_state_up", "availability_zones"} <= set(
        listed
    )
    assert listed["id"] == network
    (hosting,) = api.get(f"/v2.0/networks/{network}/dhcp-agents").json()["agents"]
    assert hosting["id"] == agent.id
    assert (hosting["agent_type"], hosting["binary"]) == ("DHCP agent", "neutron-dhcp-agent")
    assert {"resource_versions", "ha_chassis_priority", "alive", "configurations"} <= set(hosting)
    assert "ha_state" not in hosting


def test_remove_reserves_the_dhcp_port_and_the_next_agent_claims_it(
    api: Api, backend: Any, new_network: Any
) -> None:
    first, second, network = backend.new_dhcp_agent(), backend.new_dhcp_agent(), new_network()
    add(api, first.id, network)
    add_dhcp_subnet(api, network)
    backend.dhcp_setup(first, network)
    (port,) = dhcp_ports(api, network)
    assert port["binding:host_id"] == first.host
    assert port["device_id"] == f"dhcp{uuid.uuid5(uuid.NAMESPACE_DNS, first.host)}-{network}"
    remove(api, first.id, network)
    (reserved,) = dhcp_ports(api, network)
    assert reserved["id"] == port["id"]
    assert (reserved["device_id"], reserved["binding:host_id"]) == (RESERVED, first.host)
    add(api, second.id, network)
    backend.dhcp_setup(second, network)
    (claimed,) = dhcp_ports(api, network)
    assert claimed["id"] == port["id"]
    assert claimed["binding:host_id"] == second.host
    assert claimed["device_id"] == f"dhcp{uuid.uuid5(uuid.NAMESPACE_DNS, second.host)}-{network}"


def test_disabling_a_dhcp_agent_keeps_its_bindings(
    api: Api, backend: Any, new_network: Any
) -> None:
    agent, network = backend.new_dhcp_agent(), new_network()
    add(api, agent.id, network)
    backend.set_admin_state(agent, False)
    assert hosting_ids(api, network) == {agent.id}
    assert network_ids(api, agent.id) == [network]


def test_failover_pass_removes_networks_from_a_long_dead_dhcp_agent(
    api: Api, backend: Any, new_network: Any
) -> None:
    dead, alive, network = backend.new_dhcp_agent(), backend.new_dhcp_agent(), new_network()
    kept = new_network()
    add(api, dead.id, network)
    add(api, alive.id, kept)
    backend.long_dead(dead)
    backend.dhcp_failover_pass()
    assert dead.id not in hosting_ids(api, network)
    assert network_ids(api, dead.id) == []
    assert hosting_ids(api, kept) == {alive.id}
