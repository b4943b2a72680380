"""Contract: what openstacksdk does with the DHCP scheduler calls (the traps l3ha must read back).

The same client l3ha uses: ``add_dhcp_agent_to_network``, ``remove_dhcp_agent_from_network``,
``dhcp_agent_hosting_networks`` and ``network_hosting_dhcp_agents``, on both backends.
"""

from __future__ import annotations

import uuid
from typing import Any


def hosting_ids(conn: Any, network: str) -> set[str]:
    return {agent.id for agent in conn.network.network_hosting_dhcp_agents(network)}


def hosted_ids(conn: Any, agent: str) -> list[str]:
    return [network.id for network in conn.network.dhcp_agent_hosting_networks(agent)]


def test_add_returns_none_and_both_listings_show_the_binding(
    conn: Any, backend: Any, new_network: Any
) -> None:
    agent, network = backend.new_dhcp_agent(), new_network()
    assert conn.network.add_dhcp_agent_to_network(agent.id, network) is None
    assert hosting_ids(conn, network) == {agent.id}
    assert hosted_ids(conn, agent.id) == [network]
    (hosting,) = conn.network.network_hosting_dhcp_agents(network)
    assert (hosting.agent_type, hosting.host) == ("DHCP agent", agent.host)


def test_add_twice_does_not_raise_but_returns_the_409_body(
    conn: Any, backend: Any, new_network: Any
) -> None:
    agent, network = backend.new_dhcp_agent(), new_network()
    conn.network.add_dhcp_agent_to_network(agent.id, network)
    result = conn.network.add_dhcp_agent_to_network(agent.id, network)
    assert result["NeutronError"]["type"] == "NetworkHostedByDHCPAgent"
    assert hosting_ids(conn, network) == {agent.id}


def test_add_to_a_disabled_or_l3_agent_returns_the_404_body(
    conn: Any, backend: Any, new_network: Any
) -> None:
    disabled, l3_agent, network = backend.new_dhcp_agent(), backend.new_agent(), new_network()
    backend.set_admin_state(disabled, False)
    for agent in (disabled, l3_agent):
        result = conn.network.add_dhcp_agent_to_network(agent.id, network)
        assert result["NeutronError"]["type"] == "InvalidDHCPAgent"
    unknown = conn.network.add_dhcp_agent_to_network(str(uuid.uuid4()), network)
    assert unknown["NeutronError"]["type"] == "AgentNotFound"
    assert hosting_ids(conn, network) == set()


def test_remove_unbinds_and_a_repeat_or_a_miss_passes_silently(
    conn: Any, backend: Any, new_network: Any
) -> None:
    agent, other, network = backend.new_dhcp_agent(), backend.new_dhcp_agent(), new_network()
    conn.network.add_dhcp_agent_to_network(agent.id, network)
    assert conn.network.remove_dhcp_agent_from_network(other.id, network) is None  # a 409
    assert hosting_ids(conn, network) == {agent.id}
    assert conn.network.remove_dhcp_agent_from_network(agent.id, network) is None
    assert hosting_ids(conn, network) == set()
    assert conn.network.remove_dhcp_agent_from_network(agent.id, network) is None  # a 409
    assert conn.network.remove_dhcp_agent_from_network(str(uuid.uuid4()), network) is None
