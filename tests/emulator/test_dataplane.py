"""Data-plane listeners: real TCP connects succeed exactly while the router forwards."""

from __future__ import annotations

import socket

from l3ha.clock import ManualClock

from .conftest import Http, make


def connects(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return True
    except ConnectionRefusedError:
        return False


def test_listener_closes_while_router_is_dark_and_reopens(clock: ManualClock) -> None:
    with make(clock, agents=2, routers=4, dataplane_listeners=2, router_base_time=1.0) as emu:
        plane = emu.dataplane()
        with_listener = {rid: d for rid, d in plane.items() if d["address"]}
        assert len(with_listener) == 2
        addresses = [d["address"] for d in with_listener.values()]
        assert all(a.startswith("127.42.0.") for a in addresses)
        assert all(connects(a) for a in addresses)
        first_id = next(iter(with_listener))  # router-0001 on net-1
        emu.faults.kill_agent("net-1")
        assert emu.dataplane()[first_id]["reachable"] is False
        assert not connects(addresses[0])
        assert connects(addresses[1])  # router-0002 lives on net-2
        emu.advance(10)
        emu.faults.revive_agent("net-1")
        assert not connects(addresses[0])  # the restarted agent must process it first
        emu.advance(3)
        assert emu.dataplane()[first_id]["address"] == addresses[0]
        assert connects(addresses[0])
        assert emu.dataplane()[first_id]["downtime_s"] >= 10


def test_dataplane_endpoint_and_state(clock: ManualClock) -> None:
    with make(clock, agents=2, routers=3) as emu:
        api = Http(emu)
        status, doc = api.get("/_emulator/dataplane")
        assert status == 200 and set(doc) == set(emu.dataplane())
        emu.faults.dataplane_fail("net-2")
        status, state = api.get("/_emulator/state")
        assert status == 200
        assert state["routers"] == 3 and state["unreachable"] == 1
        assert [a["dataplane_ok"] for a in state["agents"]] == [True, False]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.42.0.1", 0))
        return int(probe.getsockname()[1])


def gateway_ips(api: Http) -> dict[str, str]:
    routers = api.get("/v2.0/routers")[1]["routers"]
    return {r["name"]: r["external_gateway_info"]["external_fixed_ips"][0]["ip_address"]
            for r in routers}


def test_gateway_addresses_are_the_listeners_on_one_shared_port(clock: ManualClock) -> None:
    with make(clock, agents=2, routers=4, dataplane_listeners=3) as emu:
        api = Http(emu)
        port = emu.state()["dataplane_port"]
        assert port > 0
        ips = gateway_ips(api)
        with_listener = {n: ip for n, ip in ips.items() if ip.startswith("127.42.")}
        assert sorted(with_listener) == ["router-0001", "router-0002", "router-0003"]
        assert not ips["router-0004"].startswith("127.")
        assert sorted(d["address"] for d in emu.dataplane().values() if d["address"]) == sorted(
            f"{ip}:{port}" for ip in with_listener.values())
        assert all(connects(f"{ip}:{port}") for ip in with_listener.values())


def test_configured_dataplane_port_and_a_duplicate_gateway_refuses(clock: ManualClock) -> None:
    port = free_port()
    with make(clock, agents=2, routers=2, dataplane_listeners=2, dataplane_port=port,
              router_base_time=1.0, router_port_time=0.0) as emu:
        api = Http(emu)
        ip = gateway_ips(api)["router-0001"]
        assert connects(f"{ip}:{port}")
        rid = next(r.id for r in emu.world.routers.values() if r.name == "router-0001")
        emu.faults.mgmt_partition("net-1", 100)
        api.call("DELETE", f"/v2.0/agents/{api.agent_id('net-1')}/l3-routers/{rid}")
        api.call("POST", f"/v2.0/agents/{api.agent_id('net-2')}/l3-routers", {"router_id": rid})
        assert connects(f"{ip}:{port}")  # the stale copy on net-1 still answers
        emu.advance(1.5)
        assert not connects(f"{ip}:{port}")  # forwarding on two nodes: the address clashes
        emu.advance(100)
        assert connects(f"{ip}:{port}")
