"""Simulated agents on a ManualClock: heartbeats, processing, HA takeover, faults, auto-failover."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from l3ha.clock import ManualClock
from l3ha.emulator import Emulator, FaultError

from .conftest import Http, make


def agent(api: Http, host: str) -> dict:
    status, doc = api.get(f"/v2.0/agents/{api.agent_id(host)}")
    assert status == 200
    return doc["agent"]


def router_id(emu: Emulator, name: str) -> str:
    return next(r.id for r in emu.world.routers.values() if r.name == name)


def ha_states(api: Http, rid: str) -> dict[str, str]:
    agents = api.get(f"/v2.0/routers/{rid}/l3-agents")[1]["agents"]
    return {a["host"]: a["ha_state"] for a in agents}


def port_statuses(api: Http, rid: str) -> set[str]:
    return {p["status"] for p in api.get("/v2.0/ports", device_id=rid)[1]["ports"]}


def port_states(api: Http, rid: str) -> set[tuple[str, str]]:
    """(binding:host_id, status) of the router's ports."""
    return {(p["binding:host_id"], p["status"])
            for p in api.get("/v2.0/ports", device_id=rid)[1]["ports"]}


def test_killed_agent_turns_dead_after_agent_down_time(small: Emulator, api: Http) -> None:
    small.faults.kill_agent("net-3")
    small.advance(44)  # last heartbeat is at most 30 s old at the kill
    assert agent(api, "net-3")["alive"] is True
    small.advance(32)
    assert agent(api, "net-3")["alive"] is False
    assert agent(api, "net-1")["alive"] is True
    dead = api.get("/v2.0/agents", alive="false")[1]["agents"]
    assert [a["host"] for a in dead] == ["net-3"]


def test_revive_changes_started_at_and_heartbeats_again(small: Emulator, api: Http) -> None:
    before = agent(api, "net-2")
    small.faults.kill_agent("net-2")
    small.advance(100)
    small.faults.revive_agent("net-2")
    after = agent(api, "net-2")
    assert after["alive"] is True
    assert after["started_at"] != before["started_at"]
    assert after["heartbeat_timestamp"] == after["started_at"]
    small.advance(31)
    assert agent(api, "net-2")["heartbeat_timestamp"] > after["heartbeat_timestamp"]


@pytest.fixture
def slow_cloud(clock: ManualClock) -> Iterator[Emulator]:
    """2 agents, 6 legacy routers, 1 s per router, at most 2 at once."""
    with make(clock, agents=2, routers=6, agent_concurrency=2, router_base_time=1.0,
              router_port_time=0.0) as emu:
        yield emu


def test_ports_follow_the_agent_that_fetches_the_router(slow_cloud: Emulator) -> None:
    """Unbinding from a live agent: it tears the router down, ports DOWN on its host. Binding
    changes nothing; the host moves (status reset to DOWN) when the target starts on the
    router, ACTIVE when it is done — with bounded concurrency, the third waits."""
    api = Http(slow_cloud)
    net1, net2 = api.agent_id("net-1"), api.agent_id("net-2")
    moved = [router_id(slow_cloud, f"router-000{n}") for n in (1, 3, 5)]  # all on net-1
    for rid in moved:
        assert port_states(api, rid) == {("net-1", "ACTIVE")}
        assert api.call("DELETE", f"/v2.0/agents/{net1}/l3-routers/{rid}")[0] == 204
        assert port_states(api, rid) == {("net-1", "DOWN")}
        assert slow_cloud.dataplane()[rid]["reachable"] is False
    for rid in moved:
        assert api.call("POST", f"/v2.0/agents/{net2}/l3-routers", {"router_id": rid})[0] == 201
    down2, down1 = {("net-2", "DOWN")}, {("net-1", "DOWN")}
    assert [port_states(api, rid) for rid in moved] == [down2, down2, down1]
    slow_cloud.advance(1.01)
    up2 = {("net-2", "ACTIVE")}
    assert [port_states(api, rid) for rid in moved] == [up2, up2, down2]
    slow_cloud.advance(1.0)
    assert [port_states(api, rid) for rid in moved] == [up2] * 3
    assert all(slow_cloud.dataplane()[rid]["reachable"] for rid in moved)
    counts = {a["host"]: a["configurations"]["routers"]
              for a in api.get("/v2.0/agents")[1]["agents"]}
    assert counts == {"net-1": 0, "net-2": 6}


def test_slow_agent_takes_longer(slow_cloud: Emulator) -> None:
    api = Http(slow_cloud)
    net1, net2 = api.agent_id("net-1"), api.agent_id("net-2")
    rid = router_id(slow_cloud, "router-0001")
    slow_cloud.faults.slow_agent("net-2", 5)
    api.call("DELETE", f"/v2.0/agents/{net1}/l3-routers/{rid}")
    api.call("POST", f"/v2.0/agents/{net2}/l3-routers", {"router_id": rid})
    slow_cloud.advance(4.9)
    assert port_statuses(api, rid) == {"DOWN"}
    slow_cloud.advance(0.2)
    assert port_statuses(api, rid) == {"ACTIVE"}
    assert slow_cloud.dataplane()[rid]["downtime_s"] == pytest.approx(5.0, abs=0.01)


def test_ha_takeover_after_vrrp_delay(small: Emulator, api: Http) -> None:
    rid = router_id(small, "router-0001")  # active net-1, standby net-2
    gateway = api.get("/v2.0/ports", device_id=rid,
                      device_owner="network:router_gateway")[1]["ports"][0]
    assert gateway["binding:host_id"] == "net-1"
    small.faults.kill_agent("net-1")
    assert small.dataplane()[rid]["reachable"] is False
    small.advance(6.9)
    assert small.dataplane()[rid]["reachable"] is False
    small.advance(0.2)
    assert small.dataplane()[rid]["reachable"] is True
    # the new primary reaches the server ha_vrrp_advert_int (2 s) after the takeover
    assert ha_states(api, rid)["net-2"] == "standby"
    small.advance(1.8)
    assert ha_states(api, rid)["net-2"] == "standby"
    small.advance(0.2)
    live_states = {h: s for h, s in ha_states(api, rid).items() if h != "net-1"}
    assert live_states == {"net-2": "active"}
    gateway = api.get(f"/v2.0/ports/{gateway['id']}")[1]["port"]
    assert gateway["binding:host_id"] == "net-2"
    small.advance(80)  # net-1 now reads dead: the server stops calling it active
    assert ha_states(api, rid) == {"net-1": "standby", "net-2": "active"}


def test_ha_state_unknown_when_all_replicas_dead(small: Emulator, api: Http) -> None:
    rid = router_id(small, "router-0001")
    small.faults.kill_agent("net-1")
    small.faults.kill_agent("net-2")
    small.advance(120)
    assert ha_states(api, rid) == {"net-1": "unknown", "net-2": "standby"}
    assert small.dataplane()[rid]["reachable"] is False


def test_split_brain_reports_two_actives(small: Emulator, api: Http) -> None:
    rid = router_id(small, "router-0002")
    assert small.faults.split_brain(rid, seconds=10) == 2
    assert sorted(ha_states(api, rid).values()) == ["active", "active"]
    small.advance(11)
    assert sorted(ha_states(api, rid).values()) == ["active", "standby"]
    assert small.faults.split_brain("router-0002", seconds=1) == 2  # names work too
    with pytest.raises(FaultError, match="unknown HA router 'router-0005'"):
        small.faults.split_brain("router-0005")


def test_broker_outage_kills_heartbeats_not_forwarding(small: Emulator, api: Http) -> None:
    small.faults.broker_outage(120)
    small.advance(110)
    agents = api.get("/v2.0/agents", agent_type="L3 agent")[1]["agents"]
    assert [a["alive"] for a in agents] == [False] * 4
    assert all(d["reachable"] for d in small.dataplane().values())
    small.advance(40)
    agents = api.get("/v2.0/agents", agent_type="L3 agent")[1]["agents"]
    assert [a["alive"] for a in agents] == [True] * 4


def test_mgmt_partition_and_dataplane_fail(small: Emulator, api: Http) -> None:
    small.faults.mgmt_partition("net-3", 200)
    small.faults.dataplane_fail("net-4")
    small.advance(100)
    assert agent(api, "net-3")["alive"] is False
    assert agent(api, "net-4")["alive"] is True
    plane = small.dataplane()
    assert plane[router_id(small, "router-0003")]["reachable"] is True
    assert plane[router_id(small, "router-0004")]["reachable"] is False


def test_admin_down_keeps_bindings_and_darkens_routers(small: Emulator, api: Http) -> None:
    net3 = api.agent_id("net-3")
    rid = router_id(small, "router-0003")
    api.call("PUT", f"/v2.0/agents/{net3}", {"agent": {"admin_state_up": False}})
    assert [a["host"] for a in api.get(f"/v2.0/routers/{rid}/l3-agents")[1]["agents"]] == [
        "net-3"]
    assert small.dataplane()[rid]["reachable"] is False
    api.call("PUT", f"/v2.0/agents/{net3}", {"agent": {"admin_state_up": True}})
    small.advance(5)
    assert small.dataplane()[rid]["reachable"] is True


def test_overloaded_agent_stops_forwarding(clock: ManualClock) -> None:
    with make(clock, agents=2, routers=4, agent_capacity=12) as emu:
        api = Http(emu)
        rid1, rid3 = router_id(emu, "router-0001"), router_id(emu, "router-0003")
        assert api.call("PUT", f"/v2.0/routers/{rid1}/tags/l3ha:busy")[0] == 201
        assert emu.dataplane()[rid1]["reachable"] is True  # weight 11 <= 12
        api.call("PUT", f"/v2.0/routers/{rid3}/tags/l3ha:weight=5")
        assert emu.dataplane()[rid1]["reachable"] is False  # weight 15 > 12
        assert emu.dataplane()[rid3]["reachable"] is False
        assert emu.dataplane()[router_id(emu, "router-0002")]["reachable"] is True
        api.call("DELETE", f"/v2.0/routers/{rid3}/tags/l3ha:weight=5")
        assert emu.dataplane()[rid3]["reachable"] is True


def test_neutron_auto_failover_moves_routers_off_dead_agents(clock: ManualClock) -> None:
    with make(clock, agents=3, routers=6, neutron_auto_failover=True) as emu:
        api = Http(emu)
        emu.faults.kill_agent("net-1")
        emu.advance(150)
        assert len(api.get(f"/v2.0/agents/{api.agent_id('net-1')}/l3-routers")[1]["routers"]) == 2
        emu.advance(75)
        hosted = {h: len(api.get(f"/v2.0/agents/{api.agent_id(h)}/l3-routers")[1]["routers"])
                  for h in ("net-1", "net-2", "net-3")}
        assert hosted == {"net-1": 0, "net-2": 3, "net-3": 3}
        emu.advance(5)
        assert all(d["reachable"] for d in emu.dataplane().values())


def test_rebind_during_processing_starts_over(slow_cloud: Emulator) -> None:
    api = Http(slow_cloud)
    net1, net2 = api.agent_id("net-1"), api.agent_id("net-2")
    rid = router_id(slow_cloud, "router-0001")
    api.call("DELETE", f"/v2.0/agents/{net1}/l3-routers/{rid}")
    api.call("POST", f"/v2.0/agents/{net2}/l3-routers", {"router_id": rid})
    slow_cloud.advance(0.6)
    api.call("DELETE", f"/v2.0/agents/{net2}/l3-routers/{rid}")
    api.call("POST", f"/v2.0/agents/{net2}/l3-routers", {"router_id": rid})
    slow_cloud.advance(0.6)  # the abandoned first run would have finished here
    assert port_statuses(api, rid) == {"DOWN"}
    slow_cloud.advance(0.5)
    assert port_statuses(api, rid) == {"ACTIVE"}


def test_restarting_a_healthy_agent_keeps_forwarding(small: Emulator, api: Http) -> None:
    before = agent(api, "net-3")
    small.advance(5)
    small.faults.revive_agent("net-3")
    assert agent(api, "net-3")["started_at"] != before["started_at"]
    assert small.dataplane()[router_id(small, "router-0003")]["reachable"] is True
    small.faults.dataplane_fail("net-3")
    small.faults.revive_agent("net-3")
    assert small.dataplane()[router_id(small, "router-0003")]["reachable"] is False
    small.advance(5)
    assert small.dataplane()[router_id(small, "router-0003")]["reachable"] is True


def test_agents_built_overloaded_do_not_forward(clock: ManualClock) -> None:
    with make(clock, agents=2, routers=10, busy=6, agent_capacity=25, seed=5) as emu:
        weights = {a.host: a.weight for a in emu.world.agents.values()}
        assert all(w > 25 for w in weights.values()), weights
        assert not any(d["reachable"] for d in emu.dataplane().values())


def test_binding_change_rechecks_an_overloaded_agent(clock: ManualClock) -> None:
    with make(clock, agents=2, routers=4, busy=4, agent_capacity=15) as emu:
        api = Http(emu)
        net1 = emu.world.agents_by_host["net-1"]
        assert net1.weight == 20
        first, second = sorted(net1.routers)
        assert not emu.dataplane()[second]["reachable"]
        path = f"/v2.0/agents/{api.agent_id('net-1')}/l3-routers/{first}"
        assert api.call("DELETE", path)[0] == 204
        assert net1.weight == 10
        assert emu.dataplane()[second]["reachable"] is True
