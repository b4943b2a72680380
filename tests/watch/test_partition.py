"""A management partition (the agent loses the message bus, its node still forwards):
with the data-plane second channel nothing moves; without it the routers move and the
emulator's data plane shows the outage the duplicate copies cause."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.watch.daemon_process import DEAD_AFTER, Scene, changed, scene, wait_until

pytestmark = pytest.mark.slow

PARTITION = 6 * DEAD_AFTER


def _partitioned_scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    return scene(tmp_path, monkeypatch, routers=20, busy=2, dataplane_listeners=20)


def _routers_of(made: Scene, host: str) -> set[str]:
    return {r for r, hosts in made.bindings().items() if host in hosts}


def _downtime(made: Scene, routers: set[str]) -> float:
    view = made.emu.dataplane()
    return sum(float(view[r]["downtime_s"]) for r in routers)


def test_with_the_dataplane_probe_a_partitioned_agent_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _partitioned_scene(tmp_path, monkeypatch) as made:
        port = made.emu.state()["dataplane_port"]
        watch = made.start_watch("--dataplane-probe", f"tcp:{port}")
        watch.wait_event("ready")
        before = made.bindings()
        hosted = _routers_of(made, "net-2")
        made.emu.faults.mgmt_partition("net-2", PARTITION)
        watch.wait_event(
            "verdict", timeout=3 * DEAD_AFTER + 5, agent="net-2", verdict="partitioned"
        )
        watch.wait_event("verdict", timeout=PARTITION + 5, agent="net-2", verdict="alive")
        assert changed(before, made.bindings()) == []
        assert not watch.events("move")
        assert _downtime(made, hosted) == 0.0
        assert watch.terminate() == 0


def test_without_it_routers_move_and_the_duplicates_cost_an_outage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _partitioned_scene(tmp_path, monkeypatch) as made:
        watch = made.start_watch()
        watch.wait_event("ready")
        hosted = _routers_of(made, "net-2")
        made.emu.faults.mgmt_partition("net-2", PARTITION)
        wait_until(lambda: not _routers_of(made, "net-2"), 3 * DEAD_AFTER + 20, "routers moved")
        wait_until(lambda: made.emu.state()["duplicated"] > 0, 10, "duplicate copies")  # type: ignore[operator]
        duplicated_down = _downtime(made, hosted)
        wait_until(lambda: made.emu.state()["duplicated"] == 0, PARTITION + 10, "resync")
        assert watch.terminate() == 0
        assert _downtime(made, hosted) > duplicated_down > 0.0
