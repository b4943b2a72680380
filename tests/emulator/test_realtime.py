"""The emulator on the system clock: its background thread heartbeats and processes routers."""

from __future__ import annotations

import time
from collections.abc import Callable

from .conftest import Http, make


def wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_background_thread_runs_the_simulation() -> None:
    with make(agents=2, routers=2, report_interval=0.2, agent_down_time=0.6,
              router_base_time=0.1, router_port_time=0.0) as emu:
        api = Http(emu)
        ids = emu.agent_ids_by_host()
        rid = api.get("/v2.0/routers", name="router-0001")[1]["routers"][0]["id"]
        api.call("DELETE", f"/v2.0/agents/{ids['net-1']}/l3-routers/{rid}")
        api.call("POST", f"/v2.0/agents/{ids['net-2']}/l3-routers", {"router_id": rid})
        assert wait_for(lambda: {p["status"] for p in
                                 api.get("/v2.0/ports", device_id=rid)[1]["ports"]} == {"ACTIVE"})
        emu.faults.kill_agent("net-1")
        assert wait_for(lambda: not api.get(f"/v2.0/agents/{ids['net-1']}")[1]["agent"]["alive"])
        assert api.get(f"/v2.0/agents/{ids['net-2']}")[1]["agent"]["alive"] is True
