"""What a move costs in API calls: one read-back per write, agents read once per period and
shared by the moves in flight, many routers' ports per call; and a fallback target's agent
mode checked against its router. In memory (every call counted), on a ManualClock.
"""

from __future__ import annotations

import threading
from pathlib import Path

from tests.executor.memcloud_executor import DEAD, MemCloud, evac_cloud, evac_plan, run

from l3ha.clock import ManualClock
from l3ha.executor.agentview import AgentView
from l3ha.executor.outcome import MoveOutcome
from l3ha.executor.ports import PortWaiter, RouterReadiness
from l3ha.model import AgentMode, Move, MoveKind, Plan, Router


def test_the_agent_view_reads_every_agent_once_per_period() -> None:
    cloud = evac_cloud(1)
    clock = ManualClock()
    view = AgentView(cloud, clock, max_age=1.0)  # type: ignore[arg-type]
    assert view.get("a") is not None and view.get("b") is not None
    assert view.get("nosuch") is None  # answered from the same list
    assert cloud.calls["list_agents"] == 1 and cloud.calls["get_agent"] == 0
    clock.advance(0.9)
    cloud.set_agent("a", alive=True)
    assert view.get("a").alive is False  # type: ignore[union-attr]  # still within the period
    clock.advance(0.1)
    assert view.get("a").alive is True  # type: ignore[union-attr]  # read again
    assert cloud.calls["list_agents"] == 2
    view.refresh()
    assert cloud.calls["list_agents"] == 3


def test_a_legacy_move_costs_its_two_writes_and_one_read_back_each(tmp_path: Path) -> None:
    """Evacuating 40 routers: 40 unbinds and binds, 80 read-backs, nothing else per move;
    agents are read once for the run (and once more after the canary)."""
    cloud = evac_cloud(40)
    cloud.polls_to_active = 1  # ports come up on the second look
    result, _, _ = run(
        cloud, evac_plan(40, canary=4), tmp_path, agent_recheck_interval=60.0, concurrency=8
    )
    assert result.ok and result.counts()["moved"] == 40
    calls = cloud.calls
    assert (calls["unbind"], calls["bind"], calls["router_bindings"]) == (40, 40, 80)
    assert calls["get_agent"] == 0 and calls["list_agents"] == 2  # start, after the canary
    writes_and_reads = sum(calls.values()) - calls["ports_of_routers"]
    assert writes_and_reads == 4 * 40 + 2
    # (port polls: the ManualClock races ahead while the waiter sleeps; see the next test)


class GatedClock(ManualClock):
    """A ManualClock whose ``sleep`` waits until the test opens the gate (then advances)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def sleep(self, seconds: float) -> None:
        self.gate.wait(10)
        super().sleep(seconds)


def test_the_port_waiter_polls_every_due_router_in_one_call() -> None:
    routers = [f"r{i}" for i in range(40)]
    cloud = MemCloud.build({"b": {}}, {r: ["b"] for r in routers})
    cloud.polls_to_active = 1  # ACTIVE on the second look
    clock = GatedClock()
    readiness = RouterReadiness(cloud)  # type: ignore[arg-type]
    waiter = PortWaiter(readiness, clock, interval=1.0, window=None)
    done = threading.Semaphore(0)
    try:
        for router in routers:  # all bound at the same (manual) time
            waiter.add(router, MoveKind.MOVE, "host-b", 60.0, lambda ready, _: done.release())
        clock.gate.set()
        for _ in routers:
            assert done.acquire(timeout=10)
    finally:
        waiter.close()
    assert cloud.calls["ports_of_routers"] == 2  # two looks, each at all 40 routers
    assert all(cloud.polls[r] == 2 for r in routers)


def test_the_canary_ends_once_its_writes_are_read_back_not_after_its_ports(
    tmp_path: Path,
) -> None:
    """The rest starts while the canary's ports are still coming up (its safety judgement
    is its writes); the run still waits for every port before it reports."""
    cloud = evac_cloud(6)
    cloud.polls_to_active = 3
    order: list[str] = []
    cloud.hooks.append(lambda c, op, router, agent: order.append(f"{op}:{router}"))
    result, _, _ = run(cloud, evac_plan(6, canary=2), tmp_path, concurrency=1)
    assert result.ok and [r.outcome for r in result.results] == [MoveOutcome.MOVED] * 6
    first_rest = order.index("unbind:r2")
    assert order[:first_rest] == ["unbind:r0", "bind:r0", "unbind:r1", "bind:r1"]
    assert cloud.polls["r0"] >= 3  # its ports were looked at until ACTIVE, after r2 started


def test_a_dvr_routers_fallback_target_must_be_dvr_snat(tmp_path: Path) -> None:
    """The planned dvr_snat target is disabled at run time; the first fallback is a legacy
    agent, which cannot host a DVR router's SNAT part: it is passed over, not written to."""
    cloud = MemCloud.build(
        {
            "a": {**DEAD, "mode": AgentMode.DVR_SNAT},
            "b": {"mode": AgentMode.DVR_SNAT, "admin_state_up": False},
            "c": {"mode": AgentMode.LEGACY},
            "d": {"mode": AgentMode.DVR_SNAT},
        },
        {"r0": ["a"]},
    )
    cloud.routers["r0"] = Router(id="r0", distributed=True)
    plan = Plan("evacuate", (Move("r0", MoveKind.MOVE, target="b", source="a", reason="dead"),))
    result, _, _ = run(cloud, plan, tmp_path, fallbacks={"r0": ["c", "d"]})
    (only,) = result.results
    assert only.outcome is MoveOutcome.MOVED and only.target == "d"
    assert cloud.hosts_of("r0") == ["d"]
    assert not [w for w in cloud.writes if w[2] == "c"]
