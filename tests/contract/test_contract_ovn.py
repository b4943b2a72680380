"""ML2/OVN gateway chassis through the L3 agent scheduler API, on the emulator and the real
Neutron 29 ML2/OVN server (NEUTRON.md's OVN rows; docs/ovn.md)."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
from tests.contract.contract_neutron import configured_python
from tests.contract.contract_ovn_emulator import OvnEmulatorBackend
from tests.contract.contract_ovn_neutron import OvnNeutronBackend, OvnNeutronServer

GATEWAY = "OVN Controller Gateway agent"
# Gateway chassis the real backend creates up front (every test takes one to three).
CHASSIS_POOL = 30


@pytest.fixture(scope="session")
def ovn_neutron_backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OvnNeutronBackend]:
    python, reason = configured_python()
    if python is None:
        pytest.skip(f"real Neutron server unavailable: {reason}")
    server = OvnNeutronServer(python, tmp_path_factory.mktemp("ovn", numbered=True))
    try:
        server.start()
        backend = OvnNeutronBackend(server)
        backend.add_pool(CHASSIS_POOL)
        yield backend
    finally:
        server.stop()


@pytest.fixture(scope="session")
def ovn_emulator_backend() -> Iterator[OvnEmulatorBackend]:
    backend = OvnEmulatorBackend.start()
    try:
        yield backend
    finally:
        backend.stop()


@pytest.fixture(
    scope="session",
    params=["emulator", pytest.param("neutron", marks=pytest.mark.neutron)],
)
def ovn(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(f"ovn_{request.param}_backend")


def priorities(ovn: Any, router: str) -> dict[str, int]:
    reply = ovn.api.get(f"/v2.0/routers/{router}/l3-agents")
    assert reply.status == 200, reply.text
    return {agent["id"]: agent["ha_chassis_priority"] for agent in reply.json()["agents"]}


def add(ovn: Any, chassis: str, router: str, priority: int | None = None) -> Any:
    body: dict[str, Any] = {"router_id": router}
    if priority is not None:
        body["ha_chassis_priority"] = priority
    return ovn.api.post(f"/v2.0/agents/{chassis}/l3-routers", body)


def change(ovn: Any, chassis: str, router: str, priority: int) -> Any:
    path = f"/v2.0/agents/{chassis}/l3-routers/{router}"
    return ovn.api.put(path, {"ha_chassis_priority": priority})


@pytest.fixture
def group(ovn: Any) -> Any:
    """Factory: a gateway router whose HA chassis group holds exactly fresh chassis at the
    given priorities (Neutron's own scheduling removed first)."""

    def create(*wanted: int) -> tuple[str, list[str]]:
        router = ovn.gateway_router()
        for chassis in priorities(ovn, router):
            reply = ovn.api.delete(f"/v2.0/agents/{chassis}/l3-routers/{router}")
            assert reply.status == 204, reply.text
        chosen = [ovn.new_chassis() for _ in wanted]
        for chassis, priority in zip(chosen, wanted, strict=True):
            reply = add(ovn, chassis, router, priority)
            assert reply.status == 201, reply.text
        return router, chosen

    return create


def test_gateway_chassis_are_listed_as_alive_gateway_agents(ovn: Any) -> None:
    chassis = ovn.new_chassis()
    ovn.heartbeat_all()
    query = urllib.parse.urlencode({"agent_type": GATEWAY})
    reply = ovn.api.get(f"/v2.0/agents?{query}")
    assert reply.status == 200, reply.text
    agents = {agent["id"]: agent for agent in reply.json()["agents"]}
    assert agents[chassis]["agent_type"] == GATEWAY
    assert agents[chassis]["alive"] is True
    assert agents[chassis]["binary"] == "ovn-controller"
    assert agents[chassis]["configurations"]["chassis_name"] == chassis


def test_a_chassis_that_stops_answering_reads_dead_and_alive_again(ovn: Any) -> None:
    victim, other = ovn.new_chassis(), ovn.new_chassis()
    ovn.heartbeat_all()
    ovn.kill_chassis(victim)
    assert alive(ovn, victim, other) == {victim: False, other: True}
    ovn.revive_chassis(victim)
    assert alive(ovn, victim, other) == {victim: True, other: True}


def alive(ovn: Any, *names: str) -> dict[str, bool]:
    reply = ovn.api.get("/v2.0/agents")
    assert reply.status == 200, reply.text
    return {a["id"]: a["alive"] for a in reply.json()["agents"] if a["id"] in names}


def test_a_new_gateway_router_is_scheduled_at_distinct_descending_priorities(ovn: Any) -> None:
    ovn.new_chassis()
    router = ovn.gateway_router()
    found = priorities(ovn, router)
    assert 1 <= len(found) <= 5
    assert sorted(found.values()) == list(range(1, len(found) + 1))


def test_l3_agents_and_l3_routers_show_the_group(ovn: Any, group: Any) -> None:
    router, (high, low) = group(10, 5)
    assert priorities(ovn, router) == {high: 10, low: 5}
    reply = ovn.api.get(f"/v2.0/agents/{low}/l3-routers")
    assert reply.status == 200, reply.text
    assert router in {r["id"] for r in reply.json()["routers"]}


def test_post_without_priority_adds_below_every_existing_one(ovn: Any, group: Any) -> None:
    router, _ = group(10, 7)
    extra = ovn.new_chassis()
    reply = add(ovn, extra, router)
    assert reply.status == 201, reply.text
    assert priorities(ovn, router)[extra] == 6


def test_post_without_priority_into_an_empty_group_gets_5(ovn: Any, group: Any) -> None:
    router, _ = group()
    extra = ovn.new_chassis()
    assert add(ovn, extra, router).status == 201
    assert priorities(ovn, router) == {extra: 5}


def test_post_without_priority_below_0_is_refused(ovn: Any, group: Any) -> None:
    router, _ = group(0)
    reply = add(ovn, ovn.new_chassis(), router)
    assert (reply.status, reply.error_type()) == (400, "InvalidHAChassisPriority")


def test_put_changes_a_priority(ovn: Any, group: Any) -> None:
    router, (high, low) = group(10, 5)
    reply = change(ovn, low, router, 20)
    assert reply.status == 200, reply.text
    assert priorities(ovn, router) == {high: 10, low: 20}


def test_put_of_a_priority_already_assigned_is_refused_even_its_own(ovn: Any, group: Any) -> None:
    router, (high, low) = group(10, 5)
    for chassis, priority in ((low, 10), (low, 5)):
        reply = change(ovn, chassis, router, priority)
        assert (reply.status, reply.error_type()) == (409, "HAChassisPriorityAlreadyAssigned")
    assert priorities(ovn, router) == {high: 10, low: 5}


def test_post_of_a_priority_already_assigned_is_refused(ovn: Any, group: Any) -> None:
    router, _ = group(10)
    reply = add(ovn, ovn.new_chassis(), router, 10)
    assert (reply.status, reply.error_type()) == (409, "HAChassisPriorityAlreadyAssigned")


def test_post_of_a_chassis_already_in_the_group_is_refused(ovn: Any, group: Any) -> None:
    router, (high,) = group(10)
    reply = add(ovn, high, router, 3)
    assert (reply.status, reply.error_type()) == (409, "RouterHostedByL3Agent")


def test_an_unknown_agent_is_refused(ovn: Any, group: Any) -> None:
    router, _ = group(10)
    reply = add(ovn, "no-such-chassis", router, 3)
    assert (reply.status, reply.error_type()) == (404, "InvalidL3Agent")
    reply = ovn.api.get("/v2.0/agents/no-such-chassis/l3-routers")
    assert (reply.status, reply.error_type()) == (404, "InvalidL3Agent")


@pytest.mark.parametrize("priority", [-1, 32768])
def test_an_out_of_range_priority_is_refused(ovn: Any, group: Any, priority: int) -> None:
    router, (high,) = group(10)
    reply = add(ovn, ovn.new_chassis(), router, priority)
    assert (reply.status, reply.error_type()) == (400, "InvalidHAChassisPriority")
    reply = change(ovn, high, router, priority)
    assert (reply.status, reply.error_type()) == (400, "InvalidHAChassisPriority")
    assert priorities(ovn, router) == {high: 10}


def test_delete_removes_the_chassis_and_a_second_delete_is_refused(ovn: Any, group: Any) -> None:
    router, (high, low) = group(10, 5)
    path = f"/v2.0/agents/{high}/l3-routers/{router}"
    assert ovn.api.delete(path).status == 204
    assert priorities(ovn, router) == {low: 5}
    reply = ovn.api.delete(path)
    assert (reply.status, reply.error_type()) == (409, "RouterNotHostedByL3Agent")


def test_admin_state_of_an_ovn_agent_cannot_be_changed(ovn: Any) -> None:
    chassis = ovn.new_chassis()
    reply = ovn.api.put(f"/v2.0/agents/{chassis}", {"agent": {"admin_state_up": False}})
    assert (reply.status, reply.error_type()) == (400, "BadRequest")
    assert ovn.api.get(f"/v2.0/agents/{chassis}").json()["agent"]["admin_state_up"] is True
