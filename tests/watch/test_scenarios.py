"""Scenario tests: real ``l3ha watch`` processes against the real-time emulator.

Each scenario is one of the incidents the daemon exists for: an agent dies,
the message bus restarts (every agent looks dead, then they come back one by
one), an agent flaps, the API goes away, the daemon is stopped mid-evacuation.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from tests.watch.daemon_process import DEAD_AFTER, Scene, changed, scene, wait_until

from l3ha.journal import Journal
from l3ha.weights import WeightPolicy

pytestmark = pytest.mark.slow


@pytest.fixture
def cloud(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Scene:
    with scene(tmp_path, monkeypatch) as made:
        yield made  # type: ignore[misc]


def _on(scene_: Scene, host: str) -> set[str]:
    return {r for r, hosts in scene_.bindings().items() if host in hosts}


def _all_ports_active(scene_: Scene, routers: set[str]) -> bool:
    return all(
        all(p.status in ("ACTIVE", "N/A") for p in scene_.cloud.router_ports(r)) for r in routers
    )


def _check_problem_kinds(made: Scene) -> list[str]:
    """The problem kinds ``l3ha check`` reports, the daemon's status included."""
    proc = subprocess.run(
        [sys.executable, "-c", "from l3ha.cli.main import run; run()", "check", "-f", "json",
         "--state-dir", str(made.workdir / "state")],
        env=made.env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    return [p["kind"] for p in json.loads(proc.stdout)["problems"]]


def test_a_dead_agent_is_evacuated_with_busy_routers_spread(cloud: Scene) -> None:
    watch = cloud.start_watch()
    watch.wait_event("ready")
    busy = {r.id for r in cloud.cloud.list_routers() if WeightPolicy().is_busy(r)}
    before = cloud.bindings()
    hosts = sorted({h for hs in before.values() for h in hs})
    victim = max(hosts, key=lambda h: (len(_on(cloud, h) & busy), h))
    victims = _on(cloud, victim)
    assert victims & busy
    cloud.emu.faults.kill_agent(victim)
    wait_until(lambda: not _on(cloud, victim), 30, f"{victim} evacuated")
    wait_until(lambda: _all_ports_active(cloud, victims), 30, "moved routers ACTIVE")
    after = cloud.bindings()
    assert all(after[r] and victim not in after[r] for r in victims)
    assert not [r for r, hs in after.items() if not hs]
    assert set(changed(before, after)) == victims  # nothing else moved
    # Busy routers end spread: no live agent has two more than another.
    per_agent = Counter(h for r in busy for h in after[r])
    counts = [per_agent.get(h, 0) for h in hosts if h != victim]
    assert max(counts) - min(counts) <= 1, per_agent
    wait_until(lambda: len(watch.events("move")) >= len(victims), 30, "the moves reported")
    assert watch.terminate() == 0
    moved = [e for e in watch.events("move") if e["outcome"] == "moved"]
    assert {e["router"] for e in moved} == victims


def test_a_broker_outage_with_staggered_reconnection_moves_nothing(cloud: Scene) -> None:
    watch = cloud.start_watch()
    watch.wait_event("ready")
    before = cloud.bindings()
    # 3 x dead-after without heartbeats, reconnection spread over one dead-after.
    cloud.emu.faults.broker_outage(3 * DEAD_AFTER, DEAD_AFTER)
    watch.wait_event("halt", reason="control_plane_suspect")
    time.sleep(0.5)  # the next status file carries the halt
    kinds = _check_problem_kinds(cloud)
    assert "watch_halt_control_plane_suspect" in kinds, kinds
    watch.wait_event("resumed", timeout=6 * DEAD_AFTER)
    assert changed(before, cloud.bindings()) == []
    assert not watch.events("move")
    assert watch.terminate() == 0


def test_neutron_auto_failover_moves_routers_in_the_same_outage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The comparison stays honest: the same outage makes Neutron's rescheduler move routers."""
    with scene(tmp_path, monkeypatch, neutron_auto_failover=True) as neutron:
        before = neutron.bindings()
        neutron.emu.faults.broker_outage(3 * DEAD_AFTER, DEAD_AFTER)
        time.sleep(5 * DEAD_AFTER)
        moved = changed(before, neutron.bindings())
        assert moved, "Neutron's rescheduler moved nothing during a staggered broker outage"
        assert not [r for r, hosts in neutron.bindings().items() if not hosts]


def test_a_flapping_agent_causes_bounded_moves_and_no_ping_pong(cloud: Scene) -> None:
    watch = cloud.start_watch()
    watch.wait_event("ready")
    before = cloud.bindings()
    for _ in range(4):  # down and up every half dead-after
        cloud.emu.faults.mgmt_partition("net-4", DEAD_AFTER / 2)
        time.sleep(DEAD_AFTER)
    time.sleep(DEAD_AFTER)
    assert watch.terminate() == 0
    moves = [e for e in watch.events("move") if e["outcome"] in ("moved", "pending")]
    assert changed(before, cloud.bindings()) == [] and not moves


def test_an_api_outage_halts_on_stale_data_and_recovers(cloud: Scene) -> None:
    watch = cloud.start_watch()
    watch.wait_event("ready")
    victims = _on(cloud, "net-5")
    assert victims
    cloud.emu.faults.api_outage(2 * DEAD_AFTER)
    watch.wait_event("halt", reason="stale_snapshot")
    time.sleep(0.5)
    cloud.emu.faults.kill_agent("net-5")  # dies while l3ha cannot see: acted on only after
    wait_until(lambda: not cloud.emu.state()["api"]["outage"], 10, "API back")  # type: ignore[index]
    watch.wait_event("resumed", timeout=10)
    wait_until(lambda: not _on(cloud, "net-5"), 30, "net-5 evacuated after the outage")
    halted_at = watch.events("halt")[0]["ts"]
    wait_until(lambda: len(watch.events("move")) >= len(victims), 30, "the moves reported")
    # only now: a legacy router is briefly on no agent between its removal from net-5 and
    # its addition to the target, so the last move may still be between the two above
    assert not [r for r, hosts in cloud.bindings().items() if not hosts]
    moves = watch.events("move")
    assert {e["router"] for e in moves if e["outcome"] == "moved"} == victims
    assert min(str(e["ts"]) for e in moves) > str(watch.events("resumed")[0]["ts"]) > halted_at
    assert watch.terminate() == 0
    with Journal(cloud.workdir / "state") as journal:  # the halt is in the history
        rows = sorted(journal.operation_rows(), key=lambda r: int(str(r["operation"])))
        halts = [r for r in rows if r["what"] == "halt"]
    # every halt the daemon logged, and only those, in order; the stale data's first
    # (a recovery grace may follow it when the agents' silence ends with the outage)
    assert [r["subject"] for r in halts] == [str(e["reason"]) for e in watch.events("halt")]
    assert halts[0]["subject"] == "stale_snapshot"
    assert {r["started_by"] for r in halts} == {"daemon"}


def test_sigterm_mid_evacuation_finishes_in_flight_and_the_next_start_finishes_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with scene(tmp_path, monkeypatch, routers=60, router_base_time=0.5) as big:
        watch = big.start_watch("--concurrency", "2", "--max-moves-per-cycle", "100")
        watch.wait_event("ready")
        victims = _on(big, "net-1")
        big.emu.faults.kill_agent("net-1")
        watch.wait_event("action", action="evacuate")
        wait_until(lambda: len(_on(big, "net-1")) < len(victims), 20, "first moves")
        assert watch.terminate() == 0
        left = _on(big, "net-1")
        assert left, "the evacuation finished before SIGTERM: the test proves nothing"
        assert not [r for r, hosts in big.bindings().items() if not hosts]
        again = big.start_watch(name="watch2")
        wait_until(lambda: not _on(big, "net-1"), 30, "the next start finishes the rest")
        assert again.terminate() == 0
        assert not [r for r, hosts in big.bindings().items() if not hosts]
