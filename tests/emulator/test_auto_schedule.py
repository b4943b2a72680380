"""Neutron's router scheduling outside the scheduler API, and the router ports' timeline.

Auto-scheduling (``router_auto_schedule``, on by default): an enabled agent's full resync
binds unhosted routers to it and tops HA routers up; a router update schedules an unhosted
router. Ports: binding does not move them; the fetching agent does (DOWN, then ACTIVE).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from l3ha.clock import ManualClock
from l3ha.emulator import Emulator

from .conftest import Http, make


def rid(emu: Emulator, name: str) -> str:
    return next(r.id for r in emu.world.routers.values() if r.name == name)


def hosts(api: Http, router: str) -> list[str]:
    return sorted(a["host"] for a in api.get(f"/v2.0/routers/{router}/l3-agents")[1]["agents"])


def unbind(api: Http, router: str, host: str) -> None:
    assert api.call("DELETE", f"/v2.0/agents/{api.agent_id(host)}/l3-routers/{router}")[0] == 204


def bind(api: Http, router: str, host: str) -> None:
    reply = api.call("POST", f"/v2.0/agents/{api.agent_id(host)}/l3-routers",
                     {"router_id": router})
    assert reply[0] == 201, reply


def ports(api: Http, router: str, owner: str = "") -> set[tuple[str, str]]:
    """(binding:host_id, status) of the router's ports (of one owner, if given)."""
    docs: list[dict[str, Any]] = api.get("/v2.0/ports", device_id=router)[1]["ports"]
    return {(p["binding:host_id"], p["status"]) for p in docs
            if not owner or p["device_owner"] == owner}


def cloud(clock: ManualClock, **settings: Any) -> AbstractContextManager[Emulator]:
    base = {"agents": 3, "routers": 3, "router_base_time": 1.0, "router_port_time": 0.0}
    return make(clock, **{**base, **settings})


# --- item 3: auto-scheduling ------------------------------------------------------------

def test_a_revived_agent_takes_every_unhosted_router(clock: ManualClock) -> None:
    with cloud(clock) as emu:
        api = Http(emu)
        lost = [rid(emu, "router-0001"), rid(emu, "router-0002")]  # on net-1 and net-2
        unbind(api, lost[0], "net-1")
        unbind(api, lost[1], "net-2")
        emu.faults.kill_agent("net-3")
        emu.advance(100)
        assert [hosts(api, r) for r in lost] == [[], []]  # nothing resynced meanwhile
        emu.faults.revive_agent("net-3")
        assert [hosts(api, r) for r in lost] == [["net-3"], ["net-3"]]
        assert emu.state()["auto_scheduled"] == 2
        emu.advance(2.1)  # two routers, one second each, two at a time
        assert all(emu.dataplane()[r]["reachable"] for r in lost)


def test_auto_scheduling_off_leaves_unhosted_routers_alone(clock: ManualClock) -> None:
    with cloud(clock, router_auto_schedule=False) as emu:
        api = Http(emu)
        router = rid(emu, "router-0001")
        unbind(api, router, "net-1")
        emu.faults.kill_agent("net-3")
        emu.advance(100)
        emu.faults.revive_agent("net-3")
        assert hosts(api, router) == []
        assert emu.state()["auto_scheduled"] == 0


def test_a_router_on_a_dead_agent_counts_as_hosted(clock: ManualClock) -> None:
    with cloud(clock) as emu:
        api = Http(emu)
        router = rid(emu, "router-0001")
        emu.faults.kill_agent("net-1")
        emu.faults.kill_agent("net-3")
        emu.advance(100)
        emu.faults.revive_agent("net-3")
        assert hosts(api, router) == ["net-1"]


def test_enabling_an_agent_and_a_partition_ending_are_full_resyncs(clock: ManualClock) -> None:
    with cloud(clock) as emu:
        api = Http(emu)
        first, second = rid(emu, "router-0001"), rid(emu, "router-0002")
        agent = f"/v2.0/agents/{api.agent_id('net-3')}"
        assert api.call("PUT", agent, {"agent": {"admin_state_up": False}})[0] == 200
        unbind(api, first, "net-1")
        assert hosts(api, first) == []  # a disabled agent's resync schedules nothing
        emu.faults.mgmt_partition("net-2", 50)
        assert api.call("PUT", agent, {"agent": {"admin_state_up": True}})[0] == 200
        assert hosts(api, first) == ["net-3"]
        unbind(api, second, "net-2")
        unbind(api, first, "net-3")
        emu.advance(51)  # net-2 reconnects and resyncs: it takes both
        assert hosts(api, first) == hosts(api, second) == ["net-2"]


def test_ha_routers_are_topped_up_one_replica_per_resync(clock: ManualClock) -> None:
    with cloud(clock, agents=5, routers=1, ha_routers=1, ha_replicas=2,
               max_l3_agents_per_router=3) as emu:
        api = Http(emu)
        router = rid(emu, "router-0001")
        assert hosts(api, router) == ["net-1", "net-2"]
        for host in ("net-4", "net-5"):
            emu.faults.kill_agent(host)
        emu.advance(100)
        emu.faults.revive_agent("net-4")
        assert hosts(api, router) == ["net-1", "net-2", "net-4"]
        emu.faults.revive_agent("net-5")  # three replicas already: max_l3_agents_per_router
        assert hosts(api, router) == ["net-1", "net-2", "net-4"]


def test_ha_top_up_is_capped_by_live_agents_and_counts_dead_replicas(clock: ManualClock) -> None:
    with cloud(clock, agents=4, routers=1, ha_routers=1, ha_replicas=2) as emu:
        api = Http(emu)
        router = rid(emu, "router-0001")
        for host in ("net-2", "net-3", "net-4"):
            emu.faults.kill_agent(host)
        emu.advance(100)
        emu.faults.revive_agent("net-3")  # live: net-1, net-3 -> target 2, and it has 2 (one dead)
        assert hosts(api, router) == ["net-1", "net-2"]
        emu.faults.revive_agent("net-4")  # live: 3 -> target 3
        assert hosts(api, router) == ["net-1", "net-2", "net-4"]


def test_updating_an_unhosted_router_schedules_it_to_the_least_loaded_agent(
    clock: ManualClock,
) -> None:
    with cloud(clock, routers=5) as emu:
        api = Http(emu)
        router = rid(emu, "router-0001")  # net-1 has router-0001 and router-0004
        unbind(api, router, "net-1")
        emu.faults.kill_agent("net-3")
        emu.advance(100)  # net-3 is dead; net-1 is left with one router, net-2 has two
        reply = api.call("PUT", f"/v2.0/routers/{router}", {"router": {"description": "x"}})
        assert reply[0] == 200
        assert hosts(api, router) == ["net-1"]
        reply = api.call("PUT", f"/v2.0/routers/{router}", {"router": {"description": "y"}})
        assert hosts(api, router) == ["net-1"]  # hosted: an update schedules nothing more


# --- item 4: the port timeline ------------------------------------------------------------

def test_binding_moves_no_port_the_fetching_agent_does(clock: ManualClock) -> None:
    with cloud(clock) as emu:
        api = Http(emu)
        router = rid(emu, "router-0001")
        emu.faults.kill_agent("net-1")
        emu.advance(100)
        unbind(api, router, "net-1")  # a dead agent tears nothing down
        assert ports(api, router) == {("net-1", "ACTIVE")}
        emu.faults.mgmt_partition("net-2", 30)
        bind(api, router, "net-2")  # the RPC is lost: net-2 never fetches it
        emu.advance(10)
        assert ports(api, router) == {("net-1", "ACTIVE")}  # stale, on the old host
        emu.advance(20.5)  # net-2 back: its resync fetches the router, DOWN on net-2
        assert ports(api, router) == {("net-2", "DOWN")}
        emu.advance(1.0)
        assert ports(api, router) == {("net-2", "ACTIVE")}


def test_binding_to_a_dead_agent_leaves_the_ports_where_they_were(clock: ManualClock) -> None:
    with cloud(clock) as emu:
        api = Http(emu)
        router = rid(emu, "router-0001")
        unbind(api, router, "net-1")  # net-1 is alive: it tears the router down
        assert ports(api, router) == {("net-1", "DOWN")}
        emu.faults.kill_agent("net-3")
        bind(api, router, "net-3")
        emu.advance(100)
        assert ports(api, router) == {("net-1", "DOWN")}


def test_a_new_replicas_ha_port_is_bound_when_its_agent_fetches_the_router(
    clock: ManualClock,
) -> None:
    with cloud(clock, agents=3, routers=1, ha_routers=1, ha_replicas=2,
               router_auto_schedule=False) as emu:
        api = Http(emu)
        router = rid(emu, "router-0001")
        ha = "network:router_ha_interface"
        emu.faults.mgmt_partition("net-3", 10)
        bind(api, router, "net-3")  # the RPC is lost: net-3 has not fetched the router
        assert ports(api, router, ha) == {("net-1", "ACTIVE"), ("net-2", "ACTIVE"), ("", "DOWN")}
        emu.advance(10.5)  # net-3 back: its resync is processing the router
        assert ("net-3", "DOWN") in ports(api, router, ha)
        emu.advance(1.0)
        assert ("net-3", "ACTIVE") in ports(api, router, ha)
        gateway = ports(api, router, "network:router_gateway")
        assert gateway == {("net-1", "ACTIVE")}  # the central ports stay with the active


def test_ha_central_ports_stay_active_on_a_dead_active_until_the_new_one_reports(
    clock: ManualClock,
) -> None:
    with cloud(clock, agents=3, routers=1, ha_routers=1, ha_replicas=2,
               router_auto_schedule=False) as emu:
        api = Http(emu)
        router = rid(emu, "router-0001")
        gateway = "network:router_gateway"
        emu.faults.kill_agent("net-1")
        emu.advance(5)  # net-2 has not taken over yet
        assert ports(api, router, gateway) == {("net-1", "ACTIVE")}  # nobody reports it down
        emu.advance(5)  # net-2 took over (7 s) and reported active (2 s later): they follow
        assert ports(api, router, gateway) == {("net-2", "ACTIVE")}
