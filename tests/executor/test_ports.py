"""Port readiness rules and the port waiter's polling (window, deadline), on a ManualClock."""

from __future__ import annotations

import threading

from tests.executor.memcloud_executor import MemCloud

from l3ha.clock import ManualClock
from l3ha.cloud.base import PortState
from l3ha.executor.ports import PortWaiter, RouterReadiness, ports_ready
from l3ha.model import MoveKind


def port(pid: str, owner: str, status: str, host: str) -> PortState:
    return PortState(pid, owner, status, host)


def test_legacy_router_is_ready_when_every_central_port_is_active_on_the_target() -> None:
    ports = [
        port("gw", "network:router_gateway", "ACTIVE", "net-2"),
        port("if", "network:router_interface", "BUILD", "net-2"),
        port("dist", "network:router_interface_distributed", "DOWN", "compute-1"),
    ]
    assert ports_ready(ports, MoveKind.MOVE, "net-2") == (False, ("if",))
    ports[1] = port("if", "network:router_interface", "ACTIVE", "net-2")
    assert ports_ready(ports, MoveKind.MOVE, "net-2") == (True, ())


def test_ports_still_bound_to_the_old_host_are_not_ready() -> None:
    ports = [port("gw", "network:router_gateway", "ACTIVE", "net-1")]
    assert ports_ready(ports, MoveKind.MOVE, "net-2") == (False, ("gw",))
    assert ports_ready([], MoveKind.BIND, "net-2") == (True, ())


def test_new_replica_is_ready_when_its_own_ha_port_is_active() -> None:
    ha = "network:router_ha_interface"
    ports = [port("ha1", ha, "ACTIVE", "net-1"), port("ha2", ha, "BUILD", "net-3")]
    assert ports_ready(ports, MoveKind.ADD_REPLICA, "net-3") == (False, ("ha2",))
    assert ports_ready(ports[:1], MoveKind.ADD_REPLICA, "net-3") == (False, ())
    ports[1] = port("ha2", ha, "ACTIVE", "net-3")
    assert ports_ready(ports, MoveKind.ADD_REPLICA, "net-3") == (True, ())


def wait_all(
    cloud: MemCloud, routers: list[str], timeout: float, window: int | None
) -> dict[str, tuple[bool, tuple[str, ...]]]:
    clock = ManualClock()
    waiter = PortWaiter(RouterReadiness(cloud), clock, interval=1.0, window=window)
    results: dict[str, tuple[bool, tuple[str, ...]]] = {}
    lock = threading.Lock()
    finished = threading.Event()

    def done_for(router: str):  # type: ignore[no-untyped-def]
        def done(ready: bool, waiting: tuple[str, ...]) -> None:
            with lock:
                results[router] = (ready, waiting)
                if len(results) == len(routers):
                    finished.set()

        return done

    try:
        for router in routers:
            waiter.add(router, MoveKind.MOVE, "host-b", timeout, done_for(router))
        assert finished.wait(10), "the waiter never finished"
    finally:
        waiter.close()
    return results


def test_only_the_longest_waiting_routers_of_a_target_are_polled() -> None:
    routers = [f"r{i}" for i in range(6)]
    cloud = MemCloud.build({"b": {}}, {r: ["b"] for r in routers})
    cloud.polls_to_active = 2
    order: list[str] = []
    original = cloud.router_ports

    def recording(router_id: str) -> list[PortState]:
        order.append(router_id)
        return original(router_id)

    cloud.router_ports = recording  # type: ignore[method-assign]
    results = wait_all(cloud, routers, timeout=100.0, window=2)
    assert all(ready for ready, _ in results.values())
    first_poll_of_r2 = order.index("r2")
    assert order[:first_poll_of_r2].count("r0") == 3  # r0 was done (3rd poll) before r2 began
    assert set(order[:first_poll_of_r2]) == {"r0", "r1"}


def test_a_router_never_polled_is_still_judged_at_its_deadline() -> None:
    routers = ["r0", "r1", "r2"]
    cloud = MemCloud.build({"b": {}}, {r: ["b"] for r in routers})
    cloud.never_active.add("b")
    results = wait_all(cloud, routers, timeout=5.0, window=1)
    assert results == {r: (False, (f"{r}-gw", f"{r}-if")) for r in routers}
