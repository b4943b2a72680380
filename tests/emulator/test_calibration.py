"""The emulator's default timing replays the real-stack calibration within its measured ranges.

Each test replays one step of ``bench/bench_realstack.py --calibrate`` on a ManualClock with
the emulator's defaults (no timing setting given) and checks the figure against what that
command measured on a real Neutron 29 stack (docs/fidelity.md). Run
``pytest tests/emulator/test_calibration.py -q -s`` to print the emulator's figures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from l3ha.clock import ManualClock
from l3ha.emulator import Emulator
from l3ha.emulator.testing import Clocking, emulated_cloud

from .conftest import Http

STEP = 0.1
#: The real stack's agent timers (docs/fidelity.md).
STACK = {"report_interval": 5.0, "agent_down_time": 15.0, "seed": 3}


@pytest.fixture
def stack() -> Iterator[Emulator]:
    """3 network nodes, 9 legacy routers of 2 ports: the calibration stack, default timing."""
    with emulated_cloud(Clocking.MANUAL, agents=3, routers=9, **STACK) as cloud:
        assert cloud.emulator is not None
        yield cloud.emulator


def _elapsed_until(emu: Emulator, done: Callable[[], bool], limit: float = 60.0) -> float:
    """Seconds of simulated time (in steps of STEP) until ``done`` holds."""
    waited = 0.0
    while not done():
        assert waited < limit, "never happened"
        emu.advance(STEP)
        waited += STEP
    return waited


def _ports_active_on(api: Http, router_id: str, host: str) -> bool:
    ports = api.get("/v2.0/ports", device_id=router_id)[1]["ports"]
    return all(p["status"] == "ACTIVE" and p["binding:host_id"] == host for p in ports)


def _move(api: Http, router_id: str, source: str, target: str) -> None:
    source_id, target_id = api.agent_id(source), api.agent_id(target)
    assert api.call("DELETE", f"/v2.0/agents/{source_id}/l3-routers/{router_id}")[0] == 204
    assert api.call("POST", f"/v2.0/agents/{target_id}/l3-routers",
                    {"router_id": router_id})[0] == 201  # fmt: skip


def _routers_on(emu: Emulator, host: str) -> list[str]:
    return sorted(r.id for r in emu.world.routers.values()
                  if any(b.agent.host == host for b in r.bindings.values()))  # fmt: skip


def test_one_moved_router_forwards_then_its_ports_turn_active(stack: Emulator) -> None:
    """Real: answers 2.5-6.3 s after the POST; ports ACTIVE 0-1.7 s after that."""
    api = Http(stack)
    router = _routers_on(stack, "net-1")[0]
    _move(api, router, "net-1", "net-2")
    forwards = _elapsed_until(stack, lambda: stack.dataplane()[router]["reachable"])
    active = _elapsed_until(stack, lambda: _ports_active_on(api, router, "net-2"))
    print(f"\none router: forwards {forwards:.1f} s, ports ACTIVE {forwards + active:.1f} s")
    assert 2.5 <= forwards <= 6.3
    assert 0 < active <= 1.7


def test_four_routers_onto_one_agent_take_about_twice_one(stack: Emulator) -> None:
    """Real: the four answered 5.8-7.8 s after the POSTs, about twice one router's time."""
    api = Http(stack)
    routers = (_routers_on(stack, "net-1") + _routers_on(stack, "net-2"))[:4]
    for router in routers:
        source = next(b.agent.host for b in stack.world.routers[router].bindings.values())
        _move(api, router, source, "net-3")
    last = _elapsed_until(stack, lambda: all(stack.dataplane()[r]["reachable"] for r in routers))
    print(f"\nfour routers onto one agent: the last forwards {last:.1f} s after the POSTs")
    assert 5.8 <= last <= 7.8


def test_agents_report_again_after_a_broker_outage(clock: ManualClock) -> None:
    """Real: the first agent was back 1.6 s after the broker listened again."""
    with emulated_cloud(clock, agents=3, routers=3, **STACK) as cloud:
        emu = cloud.emulator
        assert emu is not None
        emu.faults.broker_outage(20)
        emu.advance(20)
        back = _elapsed_until(emu, lambda: any(not a.cut_off for a in emu.world.agents.values()))
        print(f"\nbroker outage: the first agent is back {back:.1f} s after the broker")
        assert 1.5 <= back <= 1.7


def test_ha_takeover_after_the_active_node_dies(clock: ManualClock) -> None:
    """Real: the VIP was dark 8.8 s from the kill (ha_vrrp_advert_int 2 s, one run)."""
    with emulated_cloud(clock, agents=3, routers=1, ha_routers=1, **STACK) as cloud:
        emu = cloud.emulator
        assert emu is not None
        router = next(iter(emu.world.routers.values()))
        master = next(r.agent.host for r in router.bindings.values() if r.vrrp == "master")
        emu.faults.kill_agent(master)
        dark = _elapsed_until(emu, lambda: emu.dataplane()[router.id]["reachable"])
        print(f"\nHA takeover: the router is dark {dark:.1f} s from the kill")
        assert 7.8 <= dark <= 9.8
