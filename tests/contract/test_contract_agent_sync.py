"""Contract: what an L3 agent's sync does to bindings and ports.

Rows of NEUTRON.md "L3 agent scheduler" and "Routers and ports": with
``router_auto_schedule`` (Neutron's default) an agent's full resync binds unhosted
legacy routers to it, and leaves a router on a dead agent alone; binding through the
API leaves the router's ports' ``binding:host_id`` as it was — the agent's sync of the
router sets it (neutron/api/rpc/handlers/l3_rpc.py ``get_router_ids``, ``sync_routers``),
for an HA router's own HA port and for a legacy router's gateway and interface ports (the
port timeline of a move, docs/fidelity.md).
"""

from __future__ import annotations

from typing import Any

from tests.contract.contract_http import Api

HA_PORT = "network:router_ha_interface"


def central_port_hosts(api: Api, router: str) -> set[str]:
    """binding:host_id of the router's gateway and interface ports."""
    reply = api.get(f"/v2.0/ports?device_id={router}")
    return {p["binding:host_id"] for p in reply.json()["ports"] if p["device_owner"] != HA_PORT}


def ha_ports(api: Api, router: str) -> dict[str, str]:
    """Port id -> binding:host_id of the router's HA ports."""
    reply = api.get(f"/v2.0/ports?device_id={router}&device_owner={HA_PORT}")
    return {p["id"]: p["binding:host_id"] for p in reply.json()["ports"]}


def test_an_agents_full_resync_binds_an_unhosted_legacy_router(
    api: Api, backend: Any, new_router: Any
) -> None:
    router = new_router()
    assert api.hosting_agent_ids(router) == set()
    agent = backend.new_agent()
    assert router in backend.full_resync(agent)
    assert api.hosting_agent_ids(router) == {agent.id}


def test_a_full_resync_leaves_a_router_on_a_dead_agent_alone(
    api: Api, backend: Any, new_router: Any
) -> None:
    router = new_router()
    dead = backend.new_agent()
    assert api.bind(dead.id, router).status == 201
    backend.kill_agent(dead)
    other = backend.new_agent()
    assert router not in backend.full_resync(other)
    assert api.hosting_agent_ids(router) == {dead.id}


def test_binding_leaves_the_port_host_alone_until_the_agent_syncs(
    api: Api, backend: Any, ha_router: Any
) -> None:
    router, _ = ha_router(1)
    before = ha_ports(api, router)
    agent = backend.new_agent()
    backend.cut_off(agent)
    assert api.bind(agent.id, router).status == 201
    added = {pid: host for pid, host in ha_ports(api, router).items() if pid not in before}
    assert list(added.values()) == [""]  # its HA port exists, bound to no host yet
    assert router in backend.full_resync(agent)
    (port,) = added
    assert ha_ports(api, router)[port] == agent.host


def test_a_legacy_routers_ports_change_host_when_the_agent_syncs_it(
    api: Api, backend: Any
) -> None:
    router = backend.router_with_usage(interfaces=1, floating_ips=0)
    for agent_id in api.hosting_agent_ids(router):
        api.unbind(agent_id, router)
    before = central_port_hosts(api, router)
    agent = backend.new_agent()
    assert agent.host not in before
    backend.cut_off(agent)
    assert api.bind(agent.id, router).status == 201
    assert central_port_hosts(api, router) == before  # the binding alone moves no port
    assert router in backend.full_resync(agent)
    assert central_port_hosts(api, router) == {agent.host}
