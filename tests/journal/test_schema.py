"""The journal's schema version: a journal of the previous l3ha (no version, every move's
object in ``router_id``) opens and is brought up to date, DHCP moves becoming network
moves; a journal of a newer l3ha is refused with one line and left untouched."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from l3ha.cli.main import main
from l3ha.clock import ManualClock
from l3ha.errors import BadInputError
from l3ha.journal import (
    DB_NAME,
    Journal,
    MoveStep,
    ObjectKind,
    StartedBy,
    interrupted_operations,
)
from l3ha.journal.store import SCHEMA_VERSION

#: The schema as l3ha wrote it before it had a version (schema 1).
SCHEMA_1 = """
CREATE TABLE operations (
    id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, args TEXT NOT NULL,
    started TEXT NOT NULL, finished TEXT, status TEXT NOT NULL, pid INTEGER NOT NULL,
    host TEXT NOT NULL, summary TEXT NOT NULL DEFAULT ''
);
CREATE TABLE moves (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    operation_id INTEGER NOT NULL REFERENCES operations(id), seq INTEGER NOT NULL,
    router_id TEXT NOT NULL, source TEXT, target TEXT, kind TEXT NOT NULL,
    reason TEXT NOT NULL, step TEXT NOT NULL, outcome TEXT, created TEXT NOT NULL,
    updated TEXT NOT NULL, detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX moves_by_operation ON moves(operation_id, seq);
CREATE TABLE events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, move_id INTEGER NOT NULL REFERENCES moves(id),
    step TEXT NOT NULL, at TEXT NOT NULL, detail TEXT NOT NULL DEFAULT ''
);
INSERT INTO operations VALUES
    (1, 'evacuate', '{"agent": "net-1"}', '2026-01-01T00:00:00', '2026-01-01T00:00:09',
     'done', 1, 'elsewhere', ''),
    (2, 'dhcp-evacuate', '{"agent": "net-1"}', '2026-01-01T00:01:00', NULL,
     'running', 1, 'elsewhere', '');
INSERT INTO moves VALUES
    (1, 1, 0, 'router-a', 'agent-1', 'agent-2', 'move', 'evacuate net-1', 'bound', 'moved',
     '2026-01-01T00:00:00', '2026-01-01T00:00:09', ''),
    (2, 2, 0, 'network-b', 'dhcp-1', 'dhcp-2', 'move', 'evacuate net-1', 'intent', NULL,
     '2026-01-01T00:01:00', '2026-01-01T00:01:00', '');
INSERT INTO events VALUES (1, 2, 'intent', '2026-01-01T00:01:00', '');
"""


def _old_journal(state: Path) -> None:
    state.mkdir(mode=0o700)
    db = sqlite3.connect(state / DB_NAME)
    db.executescript(SCHEMA_1)
    db.close()


def _version(state: Path) -> int:
    db = sqlite3.connect(state / DB_NAME)
    try:
        return int(db.execute("PRAGMA user_version").fetchone()[0])
    finally:
        db.close()


def test_a_new_journal_has_the_current_version(tmp_path: Path) -> None:
    with Journal(tmp_path / "state", ManualClock()):
        pass
    assert _version(tmp_path / "state") == SCHEMA_VERSION == 2


def test_a_journal_of_the_previous_schema_opens_with_its_dhcp_moves_as_networks(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    _old_journal(state)
    with Journal(state, ManualClock()) as journal:
        (router,) = journal.moves(1)
        (network,) = journal.moves(2)
        assert (router.object_kind, router.object_id) == (ObjectKind.ROUTER, "router-a")
        assert (network.object_kind, network.object_id) == (ObjectKind.NETWORK, "network-b")
        assert [op.id for op in journal.unfinished_operations()] == [2]  # still to recover
        rows = {r["operation"]: r for r in journal.history_rows()}
        assert rows[1]["router"] == "router-a" and "network" not in rows[1]
        assert rows[2]["network"] == "network-b" and "router" not in rows[2]
        # it goes on being written as a journal of today
        op, (move,) = journal.begin_operation("dhcp-drain", {}, journal_moves(), ObjectKind.NETWORK)
        journal.record_step(move, MoveStep.INTENT, target="dhcp-3")
        assert journal.moves(op)[0].object_kind is ObjectKind.NETWORK
    assert _version(state) == SCHEMA_VERSION
    with Journal(state, ManualClock()) as journal:  # opening it again changes nothing
        assert len(journal.history()) == 3


def journal_moves() -> list[object]:
    from l3ha.model import Move, MoveKind

    return [Move("network-c", MoveKind.MOVE, "dhcp-3", "dhcp-1", "drain net-1")]


def test_a_journal_of_a_newer_l3ha_is_refused_in_one_line_and_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    _old_journal(state)
    db = sqlite3.connect(state / DB_NAME)
    db.execute("PRAGMA user_version = 3")
    db.close()
    before = (state / DB_NAME).read_bytes()
    with pytest.raises(BadInputError, match="schema version 3, newer than this l3ha reads"):
        Journal(state, ManualClock())
    monkeypatch.setenv("L3HA_STATE_DIR", str(state))
    assert main(["history"]) == 2
    (error,) = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert "schema version 3" in error
    assert _version(state) == 3
    assert (state / DB_NAME).read_bytes() == before


def test_who_started_an_operation_is_recorded_and_older_rows_say_unrecorded(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    _old_journal(state)
    with Journal(state, ManualClock(), started_by=StartedBy.DAEMON) as journal:
        op, _ = journal.begin_operation("evacuate", {"agent": "net-2"})
        assert journal.operation(op).started_by == "daemon"
        assert journal.operation(1).started_by == ""
        rows = {r["operation"]: r for r in journal.operation_rows()}
        assert (rows[op]["started_by"], rows[1]["started_by"]) == ("daemon", "unrecorded")
        assert (rows[1]["what"], rows[1]["subject"], rows[1]["results"]) == (
            "evacuate",
            "net-1",
            "1 moved",
        )
        assert (rows[2]["outcome"], rows[2]["results"]) == ("running", "1 intent")
    assert _version(state) == SCHEMA_VERSION  # an addition within schema 2
    assert [o.id for o in interrupted_operations(state)] == [2]  # the read-only reader
    with Journal(state, ManualClock(), started_by=StartedBy.ROLLING) as journal:
        op, _ = journal.begin_operation("drain", {"agent": "net-3"})
        assert [o.started_by for o in journal.history(last=2)] == ["rolling", "daemon"]
