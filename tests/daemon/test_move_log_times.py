"""The watch's ``move`` event times a move: its writes, and until its ports are ACTIVE.

The executor records, per move, when its writes were read back (``write_seconds``)
beside when it finished (``seconds``: ports ACTIVE) and when it started in the run
(``started_after``); the daemon's ``move`` event carries them, its older fields kept.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.executor.emulator_env import Env, start_env

from l3ha.daemon.decide import Decision
from l3ha.daemon.logevents import JsonFormatter, log_move
from l3ha.executor import MoveOutcome, MoveResult
from l3ha.model import Agent, Move, MoveKind, Router, Snapshot
from l3ha.operations import Action

OLD_FIELDS = {
    "event", "action", "router", "router_name", "kind", "source", "source_host", "target",
    "target_host", "outcome", "reason",
}  # fmt: skip


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    # ports turn ACTIVE 0.5 s after the router forwards (the real stack: 0-1.7 s)
    made = start_env(tmp_path, monkeypatch, port_active_delay=0.5)
    with made.closing:
        yield made


def test_each_move_times_its_writes_apart_from_its_ports(env: Env) -> None:
    env.kill("net-1")
    plan = env.evacuation("net-1")
    executor, _ = env.executor()
    result = executor.run(plan)
    assert result.ok and len(result.results) == len(plan.moves) > 1
    for move in result.results:
        assert move.outcome is MoveOutcome.MOVED
        assert 0 < move.write_seconds < move.seconds
        assert move.seconds - move.write_seconds > 0.3  # ports ACTIVE 0.5 s after forwarding
        assert 0 <= move.started_after < result.seconds
        assert move.started_after + move.seconds <= result.seconds + 1e-6


def _logged(result: MoveResult) -> dict[str, object]:
    """The JSON line ``l3ha watch --log-format json`` writes for this result's move."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    log = logging.getLogger("l3ha.watch")
    level = log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    snapshot = Snapshot(
        (Agent(id="a-src", host="net-1"), Agent(id="a-dst", host="net-2")),
        (Router(id="r1", name="web"),),
        (),
    )
    try:
        log_move(Decision(Action.EVACUATE, "dead", "a-src"), result, snapshot)
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
    return dict(json.loads(stream.getvalue().splitlines()[-1]))


def test_the_move_event_carries_both_times_and_keeps_its_fields() -> None:
    move = Move("r1", MoveKind.MOVE, "a-dst", "a-src", "evacuate")
    done = MoveResult(
        move, MoveOutcome.MOVED, "ok", "a-dst", seconds=4.25, write_seconds=0.75, started_after=1.5
    )
    doc = _logged(done)
    assert set(doc) >= OLD_FIELDS
    assert (doc["router_name"], doc["source_host"], doc["target_host"]) == ("web", "net-1", "net-2")
    assert doc["write_seconds"] == 0.75 and doc["seconds"] == 4.25
    assert doc["written_after"] == 2.25 and doc["finished_after"] == 5.75


def test_a_move_never_written_has_no_written_time() -> None:
    move = Move("r1", MoveKind.MOVE, "a-dst", "a-src", "evacuate")
    failed = MoveResult(move, MoveOutcome.FAILED, "target refused", seconds=0.5)
    doc = _logged(failed)
    assert doc["outcome"] == "failed" and doc["write_seconds"] == 0.0
    assert doc["written_after"] is None and doc["finished_after"] == 0.5
