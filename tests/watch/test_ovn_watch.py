"""``l3ha watch`` on ML2/OVN: the daemon's gateway chassis half on the emulator's OVN mode,
in this process on one ManualClock (emulator and daemon), so simulated time costs nothing.

A chassis dead beyond dead_after is evacuated (out of every group, so it cannot fail its
routers back on return); a southbound outage (every chassis dead at once) halts and writes
nothing; a chassis flapping faster than dead_after moves nothing. With --auto-rebalance a
returned chassis gets primaries back once its grace has passed, gradually, each router
moved at most once, and nothing is written during a southbound outage or its grace. The
CLI's OVN-only and L3-only refusals are one line, exit 2."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from l3ha.cli.main import main
from l3ha.clock import ManualClock
from l3ha.cloud.adapter import connect
from l3ha.cloud.ovn import NeutronOvn
from l3ha.daemon.metrics import WatchMetrics
from l3ha.daemon.settings import WatchSettings, load_settings
from l3ha.daemon.watch import Parts, Watcher
from l3ha.emulator import CLOUD_NAME, Emulator
from l3ha.emulator.ovn_world import MoveKind
from l3ha.emulator.testing import FAST, emulated_cloud
from l3ha.journal import Journal, ObjectKind

#: 3 gateway chassis, 6 routers; Neutron's agent_down_time 1 s (FAST).
OVN = {"ovn": True, "ovn_chassis": 3, "routers": 6, **FAST}
INTERVAL = 0.5
DEAD_AFTER = 3.0


@dataclass
class Scene:
    emu: Emulator
    watcher: Watcher
    journal: Journal

    def groups(self) -> dict[str, dict[str, int]]:
        assert self.emu.ovn is not None
        return {rid: dict(g.priorities) for rid, g in self.emu.ovn.ovn.gateways.items()}

    def run(self, seconds: float) -> None:
        """Cycles every INTERVAL for ``seconds`` of simulated time."""
        for _ in range(round(seconds / INTERVAL)):
            self.watcher.cycle()
            self.emu.advance(INTERVAL)

    def writes(self) -> int:
        return sum(len(self.journal.moves(op.id)) for op in self.journal.history())


#: The returning chassis' grace: HealthPolicy's restart_grace_base (+ 0.5 s per router of
#: its groups: evacuated, it has none).
GRACE = 30.0


def _settings(state: Path, auto_rebalance: bool = False) -> WatchSettings:
    return replace(
        load_settings(None, [], default_files=()),
        state_dir=state,
        interval=INTERVAL,
        dead_after=DEAD_AFTER,
        report_interval=1.0,
        dead_observations=2,
        metrics_port=0,
        auto_rebalance=auto_rebalance,
        max_moves_per_cycle=2 if auto_rebalance else 400,  # gradual: 2 moves a cycle
    )


@pytest.fixture
def scene(tmp_path: Path) -> Iterator[Scene]:
    yield from _scene(tmp_path, auto_rebalance=False)


@pytest.fixture
def auto_scene(tmp_path: Path) -> Iterator[Scene]:
    yield from _scene(tmp_path, auto_rebalance=True)


def _scene(tmp_path: Path, auto_rebalance: bool) -> Iterator[Scene]:
    clock = ManualClock()
    with emulated_cloud(clock, workdir=tmp_path, environ=os.environ, **OVN) as cloud:
        assert cloud.emulator is not None
        neutron = connect(cloud=CLOUD_NAME)
        settings = _settings(tmp_path / "state", auto_rebalance)
        with Journal(settings.state_dir) as journal:
            ovn = NeutronOvn(neutron, clock=clock)
            parts = Parts(settings, neutron, journal, clock, metrics=WatchMetrics("t"), ovn=ovn)
            scene = Scene(cloud.emulator, Watcher(parts), journal)
            scene.run(2.0)  # every chassis observed alive
            yield scene


def test_a_dead_chassis_is_evacuated_after_dead_after_and_none_fails_back(scene: Scene) -> None:
    before = scene.groups()
    scene.emu.faults.kill_chassis("gw-1")
    scene.run(DEAD_AFTER / 2)
    assert scene.groups() == before  # not yet dead on l3ha's clock
    scene.run(2 * DEAD_AFTER)
    after = scene.groups()
    assert all("gw-1" not in g for g in after.values())
    assert all(set(g) == {"gw-2", "gw-3"} for g in after.values())  # two live chassis each
    ops = [op for op in scene.journal.history() if op.kind == "ovn-evacuate"]
    assert len(ops) == 1 and ops[0].args.get("by") == "watch"
    moves = scene.journal.moves(ops[0].id)
    assert len(moves) == len(before) and all(m.object_kind is ObjectKind.GATEWAY for m in moves)
    scene.emu.faults.revive_chassis("gw-1")
    scene.run(3 * DEAD_AFTER)
    assert scene.emu.ovn is not None
    outages = [o.kind for g in scene.emu.ovn.ovn.gateways.values() for o in g.outages]
    assert MoveKind.FAILBACK not in outages
    assert scene.groups() == after  # nothing moves back by itself
    assert all(d["reachable"] for d in scene.emu.dataplane().values())
    metrics = scene.watcher.parts.metrics
    assert metrics is not None
    text = generate_latest(metrics.registry).decode()
    assert 'l3ha_agent_routers{host="gw-1"} 0.0' in text  # no primary back on its return
    assert 'l3ha_agents{verdict="alive"} 3.0' in text and "l3ha_unhosted_routers 0.0" in text


def test_a_southbound_outage_halts_and_writes_nothing(scene: Scene) -> None:
    before = scene.groups()
    scene.emu.faults.sb_outage(4 * DEAD_AFTER)
    scene.run(4 * DEAD_AFTER)
    main_half = scene.watcher.main
    assert all(v.value == "dead" for v in main_half.previous.values())
    assert scene.writes() == 0
    assert [op.kind for op in scene.journal.history()] == ["halt"] * len(scene.journal.history())
    assert any(op.args.get("reason") == "control_plane_suspect"
               for op in scene.journal.history())  # fmt: skip
    scene.run(3 * DEAD_AFTER)  # the outage over, the grace passes: still no write of ours
    assert scene.writes() == 0
    assert set(scene.groups()) == set(before)


def test_a_chassis_flapping_faster_than_dead_after_moves_nothing(scene: Scene) -> None:
    before = scene.groups()
    for _ in range(4):
        scene.emu.faults.kill_chassis("gw-2")
        scene.run(DEAD_AFTER / 2)
        scene.emu.faults.revive_chassis("gw-2")
        scene.run(DEAD_AFTER / 2)
    scene.run(DEAD_AFTER)
    assert scene.writes() == 0
    assert not [op for op in scene.journal.history() if op.kind == "ovn-evacuate"]
    assert {r: set(g) for r, g in scene.groups().items()} == {r: set(g) for r, g in before.items()}


def _primaries(scene: Scene) -> dict[str, str]:
    """Each router's primary: its highest-priority chassis (all of them alive)."""
    return {rid: max(g, key=lambda c: g[c]) for rid, g in scene.groups().items()}


def _rebalance_moves(scene: Scene) -> list[str]:
    """The routers every journalled rebalance moved, in order."""
    ops = [op for op in scene.journal.history() if op.kind == "ovn-rebalance"]
    return [m.object_id for op in reversed(ops) for m in scene.journal.moves(op.id)]


def _evacuated_and_returned(scene: Scene) -> None:
    scene.emu.faults.kill_chassis("gw-1")
    scene.run(3 * DEAD_AFTER)
    assert all("gw-1" not in g for g in scene.groups().values())
    scene.emu.faults.revive_chassis("gw-1")


def test_auto_rebalance_gives_a_returned_chassis_primaries_after_its_grace(
    auto_scene: Scene,
) -> None:
    scene = auto_scene
    _evacuated_and_returned(scene)
    scene.run(GRACE - 2 * INTERVAL)
    assert "gw-1" not in set(_primaries(scene).values())  # within its grace: nothing back
    assert _rebalance_moves(scene) == []
    scene.run(2 * INTERVAL + 4 * INTERVAL)
    counts = Counter(_primaries(scene).values())
    assert counts == {"gw-1": 2, "gw-2": 2, "gw-3": 2}, counts
    moved = _rebalance_moves(scene)
    assert len(moved) == 2 and len(set(moved)) == len(moved)  # each router moved once
    ops = [op for op in scene.journal.history() if op.kind == "ovn-rebalance"]
    assert all(len(scene.journal.moves(op.id)) <= 2 for op in ops)  # the cycle's budget
    scene.run(10 * INTERVAL)
    assert _rebalance_moves(scene) == moved  # balanced: nothing more
    assert scene.emu.ovn is not None
    outages = [o.kind for g in scene.emu.ovn.ovn.gateways.values() for o in g.outages]
    assert MoveKind.FAILBACK not in outages
    assert all(d["reachable"] for d in scene.emu.dataplane().values())


def test_without_auto_rebalance_a_returned_chassis_gets_nothing_back(scene: Scene) -> None:
    _evacuated_and_returned(scene)
    scene.run(2 * GRACE)
    assert "gw-1" not in set(_primaries(scene).values())
    assert _rebalance_moves(scene) == []


def test_auto_rebalance_writes_nothing_during_a_southbound_outage_and_its_grace(
    auto_scene: Scene,
) -> None:
    scene = auto_scene
    _evacuated_and_returned(scene)
    scene.run(GRACE / 2)
    writes = scene.writes()
    scene.emu.faults.sb_outage(4 * DEAD_AFTER)
    scene.run(4 * DEAD_AFTER + GRACE - 2 * INTERVAL)  # the outage, then less than a grace
    assert scene.writes() == writes
    assert _rebalance_moves(scene) == []
    scene.run(GRACE)
    assert _rebalance_moves(scene)  # once the grace has passed, it rebalances
    assert Counter(_primaries(scene).values())["gw-1"] >= 1


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--dhcp",), "--dhcp is for DHCP agents"),
        (("--dataplane-probe", "tcp:22"), "--dataplane-probe is for L3 agents"),
        (("--backend", "l3-agent", "--min-chassis", "2"), "--min-chassis is for ML2/OVN"),
    ],
)
def test_an_option_of_the_other_backend_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], words: str
) -> None:
    with emulated_cloud(workdir=tmp_path, environ=os.environ, **OVN):
        code = main(["watch", "--once", "--state-dir", str(tmp_path / "s"), "--metrics-port",
                     "0", *args])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and words in err
    assert not (tmp_path / "s" / "watch-status.json").exists()


def test_watch_once_on_ml2_ovn_with_auto_rebalance_judges_the_chassis(tmp_path: Path) -> None:
    import json

    with emulated_cloud(workdir=tmp_path, environ=os.environ, **OVN):
        code = main(["watch", "--once", "--state-dir", str(tmp_path / "s"), "--metrics-port",
                     "0", "--interval", "5", "--min-chassis", "2", "--auto-rebalance"])  # fmt: skip
    assert code == 0
    status = json.loads((tmp_path / "s" / "watch-status.json").read_text())
    assert status["state"] == "stopped" and status["halts"] == []
    assert sum(status["verdicts"].values()) == 3  # the three gateway chassis, no L3 agent
