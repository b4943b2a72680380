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
        emu.kill_agent("net-1")
        assert emu.dataplane()[first_id]["reachable"] is False
        assert not connects(addresses[0])
        assert connects(addresses[1])  # router-0002 lives on net-2
        emu.advance(10)
        emu.revive_agent("net-1")
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
        emu.dataplane_fail("net-2")
        status, state = api.get("/_emulator/state")
        assert status == 200
        assert state["routers"] == 3 and state["unreachable"] == 1
        assert [a["dataplane_ok"] for a in state["agents"]] == [True, False]
