"""The probe's journal events: l3ha's own moves, started and finished, on the timeline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.actions.conftest import ACTIONS_CLOUD, wait_for

from l3ha.cli.main import main
from l3ha.clock import ManualClock
from l3ha.emulator.testing import Clocking, emulated_cloud
from l3ha.journal import Journal, MoveStep
from l3ha.model import Move, MoveKind
from l3ha.probe.events import JournalEventPoller


def test_moves_started_and_finished_are_reported_once(tmp_path: Path) -> None:
    state = tmp_path / "state"
    poller = JournalEventPoller(state, ManualClock(), host_of={"a2": "net-2"}.get)
    seen: list[str] = []
    poller.start(lambda event: seen.append(event.text))
    poller.stop()
    assert poller.poll_once() == []  # no journal yet: nothing, and nothing created
    assert not state.exists()

    with Journal(state) as journal:
        move = Move("r1", MoveKind.MOVE, target="a2", source="a1", reason="test")
        _op, (move_id,) = journal.begin_operation("evacuate", {}, [move])
        journal.record_step(move_id, MoveStep.INTENT, target="a2")
        journal.record_step(move_id, MoveStep.UNBOUND)
        journal.record_step(move_id, MoveStep.BOUND)
        journal.record_outcome(move_id, "moved")
    texts = [e.text for e in poller.poll_once()]
    assert texts == [
        "l3ha evacuate: router r1 move started -> net-2",
        "l3ha evacuate: router r1 move moved -> net-2",
    ]
    assert seen == texts
    assert poller.poll_once() == []


def test_steps_before_the_probe_started_are_not_reported(tmp_path: Path) -> None:
    with Journal(tmp_path) as journal:
        _op, (move_id,) = journal.begin_operation(
            "rebalance", {}, [Move("r1", MoveKind.MOVE, target="a2", source="a1")]
        )
        journal.record_step(move_id, MoveStep.INTENT, target="a2")
        poller = JournalEventPoller(tmp_path, ManualClock())
        poller.start(lambda event: None)
        poller.stop()
        journal.record_outcome(move_id, "failed", "no target took it")
    texts = [e.text for e in poller.poll_once()]
    assert texts == ["l3ha rebalance: router r1 move failed -> a2 (no target took it)"]


def test_probe_events_show_an_evacuation_from_another_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    out = tmp_path / "out"
    monkeypatch.setenv("L3HA_STATE_DIR", str(state))
    with emulated_cloud(
        Clocking.REAL, workdir=tmp_path, environ=os.environ, **ACTIONS_CLOUD
    ) as cloud:
        emu = cloud.emulator
        assert emu is not None
        command = [
            sys.executable,
            "-m",
            "l3ha.cli.main",
            "probe",
            "--tcp",
            "127.0.0.1:1",
            "--interval",
            "0.2",
            "--duration",
            "8",
            "--output",
            str(out),
            "--events",
            "--events-interval",
            "0.2",
            "--state-dir",
            str(state),
        ]
        probe = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ)
        )
        try:
            wait_for((out / "samples.jsonl").exists, 20)
            time.sleep(0.5)
            emu.faults.kill_agent("net-1")
            time.sleep(1.5)
            assert main(["evacuate", "net-1", "--port-timeout", "20"]) == 0
            _, stderr = probe.communicate(timeout=40)
        finally:
            probe.kill()
    assert probe.returncode == 0, stderr
    texts = [json.loads(x)["text"] for x in (out / "events.jsonl").read_text().splitlines()]
    dead = texts.index("agent net-1: dead")
    started = [i for i, t in enumerate(texts) if t.startswith("l3ha evacuate:") and "started" in t]
    moved = [t for t in texts if t.startswith("l3ha evacuate:") and " moved " in t]
    assert started and min(started) > dead
    assert len(moved) == len(started)
    assert any(" move moved -> net-" in t for t in moved)
    assert "l3ha evacuate:" in (out / "timeline.txt").read_text()
