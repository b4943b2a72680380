"""The adapter end to end against the Neutron API emulator: snapshot, writes, refusals, faults.

The emulator runs on a ManualClock, so agent death is reached by advancing
time, never by sleeping.
"""

from __future__ import annotations

import pytest

from l3ha.cloud.adapter import NeutronCloud, connect
from l3ha.emulator import Emulator
from l3ha.errors import (
    ApiNotFoundError,
    ConflictError,
    NotFoundError,
    ServerError,
)
from l3ha.model import Router, Snapshot


@pytest.fixture
def cloud(emulator: Emulator) -> NeutronCloud:
    return connect("l3ha-emulator", timeout=10)


def _legacy_hosted(snap: Snapshot) -> list[Router]:
    return [
        r for r in snap.routers if not r.ha and not r.distributed and snap.bindings_of_router(r.id)
    ]


def _host_of(snap: Snapshot, router_id: str) -> str:
    (binding,) = snap.bindings_of_router(router_id)
    return snap.agents_by_id[binding.agent_id].host


def test_snapshot_has_every_agent_router_binding_and_tag(cloud: NeutronCloud) -> None:
    snap = cloud.read_snapshot(with_ha_state=True)
    assert sorted(a.host for a in snap.agents) == ["net-1", "net-2", "net-3", "net-4"]
    assert {a.availability_zone for a in snap.agents} == {"az1", "az2"}
    assert all(a.alive and a.admin_state_up and a.heartbeat_timestamp for a in snap.agents)
    assert len(snap.routers) == 20
    assert sum("l3ha:busy" in r.tags for r in snap.routers) == 2
    ha = [r for r in snap.routers if r.ha]
    assert len(ha) == 2
    for r in ha:
        states = sorted(str(b.ha_state) for b in snap.bindings_of_router(r.id))
        assert states == ["active", "standby"]
    for r in _legacy_hosted(snap):
        (binding,) = snap.bindings_of_router(r.id)
        assert binding.ha_state is None
    assert snap.observed_at


def test_unbind_then_bind_elsewhere_moves_a_legacy_router(cloud: NeutronCloud) -> None:
    snap = cloud.read_snapshot()
    router = _legacy_hosted(snap)[0]
    source = snap.bindings_of_router(router.id)[0].agent_id
    target = next(a.id for a in snap.agents if a.id != source)
    cloud.unbind(router.id, source)
    assert cloud.router_bindings(router.id) == []
    cloud.unbind(router.id, source)  # idempotent
    cloud.bind(router.id, target)
    assert [b.agent_id for b in cloud.router_bindings(router.id)] == [target]
    cloud.bind(router.id, target)  # same agent again: a no-op
    assert [b.agent_id for b in cloud.router_bindings(router.id)] == [target]


def test_binding_a_legacy_router_hosted_elsewhere_is_a_conflict(cloud: NeutronCloud) -> None:
    snap = cloud.read_snapshot()
    router = _legacy_hosted(snap)[0]
    source = snap.bindings_of_router(router.id)[0].agent_id
    target = next(a.id for a in snap.agents if a.id != source)
    with pytest.raises(ConflictError, match="409") as info:
        cloud.bind(router.id, target)
    assert not info.value.retryable
    assert [b.agent_id for b in cloud.router_bindings(router.id)] == [source]


def test_ha_router_gains_a_replica(cloud: NeutronCloud) -> None:
    snap = cloud.read_snapshot()
    router = next(r for r in snap.routers if r.ha)
    hosts = {b.agent_id for b in snap.bindings_of_router(router.id)}
    spare = next(a.id for a in snap.agents if a.id not in hosts)
    cloud.bind(router.id, spare)
    assert {b.agent_id for b in cloud.router_bindings(router.id)} == hosts | {spare}


def test_admin_down_agent_refuses_routers_until_enabled(cloud: NeutronCloud) -> None:
    snap = cloud.read_snapshot()
    router = _legacy_hosted(snap)[0]
    source = snap.bindings_of_router(router.id)[0].agent_id
    target = next(a.id for a in snap.agents if a.id != source)
    cloud.unbind(router.id, source)
    cloud.set_admin_state(target, False)
    assert cloud.get_agent(target).admin_state_up is False
    with pytest.raises(ConflictError, match="InvalidL3Agent"):
        cloud.bind(router.id, target)
    cloud.set_admin_state(target, True)
    cloud.bind(router.id, target)
    assert [b.agent_id for b in cloud.router_bindings(router.id)] == [target]


def test_description_is_written_and_read_back(cloud: NeutronCloud) -> None:
    agent = cloud.list_agents()[0]
    cloud.set_description(agent.id, "l3ha: drained for maintenance")
    assert cloud.get_agent(agent.id).description == "l3ha: drained for maintenance"


def test_unknown_router_and_agent_are_not_found(cloud: NeutronCloud) -> None:
    agent = cloud.list_agents()[0]
    with pytest.raises(ApiNotFoundError, match="RouterNotFound"):
        cloud.bind("00000000-0000-0000-0000-000000000000", agent.id)
    router = cloud.list_routers()[0]
    with pytest.raises(ApiNotFoundError):
        cloud.bind(router.id, "00000000-0000-0000-0000-00000000dead")
    with pytest.raises(NotFoundError):
        cloud.get_agent("00000000-0000-0000-0000-00000000dead")


def test_killed_agent_turns_dead_once_its_heartbeat_is_old(
    emulator: Emulator, cloud: NeutronCloud
) -> None:
    emulator.faults.kill_agent("net-1")
    emulator.advance(2.0)
    alive = {a.host: a.alive for a in cloud.list_agents()}
    assert alive == {"net-1": False, "net-2": True, "net-3": True, "net-4": True}


def test_router_ports_turn_active_after_processing(emulator: Emulator, cloud: NeutronCloud) -> None:
    emulator.advance(5.0)
    snap = cloud.read_snapshot()
    router = _legacy_hosted(snap)[0]
    ports = cloud.router_ports(router.id)
    assert ports
    assert {p.status for p in ports} == {"ACTIVE"}
    host = _host_of(snap, router.id)
    gateway = [p for p in ports if p.device_owner == "network:router_gateway"]
    assert all(p.host == host for p in gateway)
    many = cloud.ports_of_routers([r.id for r in snap.routers[:5]])
    assert sorted(many) == sorted(r.id for r in snap.routers[:5])


def test_api_errors_become_retryable_server_errors(emulator: Emulator, cloud: NeutronCloud) -> None:
    emulator.faults.api_errors(1.0, 503)
    with pytest.raises(ServerError) as info:
        cloud.list_agents()
    assert info.value.retryable


def test_api_outage_is_retryable_and_ends(emulator: Emulator, cloud: NeutronCloud) -> None:
    emulator.faults.api_outage(5.0)
    with pytest.raises(ServerError, match="503") as info:
        cloud.list_routers()
    assert info.value.retryable
    emulator.advance(6.0)
    assert len(cloud.list_routers()) == 20
