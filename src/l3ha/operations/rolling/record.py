"""The rolling maintenance journal: runs, their steps, the command output. I/O: SQLite.

Kept in ``rolling.sqlite`` next to l3ha's journal (the same state dir, the
same modes: the directory 0700, the files 0600), apart from it: the moves and
agent changes a run makes are journalled by the executor as always; this
file records the run above them. A run is recorded with every step it will
take before the first one starts; each step is marked ``running`` (fsynced)
before it acts and ``done`` or ``failed`` after, with a detail for the
operator and the command's output, appended line by line as it streams. A
run killed at any point (``kill -9``) is found again by ``--resume`` and
continues from its first step that is not done.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from l3ha.journal import default_state_dir
from l3ha.journal.statedir import open_database, process_alive
from l3ha.operations.rolling.plan import Phase, StepKey

DB_NAME = "rolling.sqlite"
MAX_OUTPUT = 1 << 20  # bytes of command output kept per step

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    started TEXT NOT NULL,
    finished TEXT,
    status TEXT NOT NULL,
    request TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    pid INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS steps (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    seq INTEGER NOT NULL,
    host TEXT NOT NULL,
    phase TEXT NOT NULL,
    participant TEXT NOT NULL,
    status TEXT NOT NULL,
    started TEXT,
    finished TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    detail TEXT NOT NULL DEFAULT '{}',
    output TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, seq)
);
"""


class RunStatus(StrEnum):
    RUNNING = "running"
    STOPPED = "stopped"  # a step failed or a gate stopped it: --resume continues
    DONE = "done"


class StepStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


@dataclass(frozen=True)
class StepRecord:
    seq: int
    key: StepKey
    status: StepStatus
    attempts: int
    detail: dict[str, Any]
    output: str
    started: str | None
    finished: str | None


@dataclass(frozen=True)
class RunRecord:
    id: int
    started: str
    status: RunStatus
    request: dict[str, Any]
    reason: str
    pid: int


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class RollingRecord:
    """The rolling journal in ``state_dir``; safe to share between threads."""

    def __init__(self, state_dir: Path | None = None) -> None:
        self.state_dir = state_dir if state_dir is not None else default_state_dir()
        self._db = open_database(self.state_dir, DB_NAME, _SCHEMA, "the rolling journal")
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> RollingRecord:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _exec(self, sql: str, params: tuple[object, ...] = ()) -> sqlite3.Cursor:
        with self._lock:
            return self._db.execute(sql, params)

    # --- runs --------------------------------------------------------------------

    def begin_run(self, request: dict[str, Any], steps: list[StepKey]) -> int:
        """Record a new run and all its steps (pending); its id."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                cur = self._db.execute(
                    "INSERT INTO runs (started, status, request, pid) VALUES (?, ?, ?, ?)",
                    (_now(), RunStatus.RUNNING, json.dumps(request), os.getpid()),
                )
                run_id = int(cur.lastrowid or 0)
                self._db.executemany(
                    "INSERT INTO steps (run_id, seq, host, phase, participant, status) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        (run_id, n, s.host, s.phase.value, s.participant, StepStatus.PENDING)
                        for n, s in enumerate(steps)
                    ],
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return run_id

    def claim_run(self, run_id: int) -> None:
        """This process continues the run (``--resume``)."""
        self._exec(
            "UPDATE runs SET status = ?, pid = ?, finished = NULL WHERE id = ?",
            (RunStatus.RUNNING, os.getpid(), run_id),
        )

    def finish_run(self, run_id: int, status: RunStatus, reason: str = "") -> None:
        self._exec(
            "UPDATE runs SET status = ?, reason = ?, finished = ? WHERE id = ?",
            (status, reason, _now(), run_id),
        )

    def latest_run(self) -> RunRecord | None:
        rows = self._exec(
            "SELECT id, started, status, request, reason, pid FROM runs ORDER BY id DESC LIMIT 1"
        ).fetchall()
        return _run_from_row(rows[0]) if rows else None

    def live_run(self) -> RunRecord | None:
        """A run still marked running by a process that is alive (not this one)."""
        latest = self.latest_run()
        if latest is None or latest.status is not RunStatus.RUNNING:
            return None
        if latest.pid == os.getpid() or not process_alive(latest.pid):
            return None
        return latest

    # --- steps --------------------------------------------------------------------

    def steps(self, run_id: int) -> list[StepRecord]:
        rows = self._exec(
            "SELECT seq, host, phase, participant, status, attempts, detail, output, started, "
            "finished FROM steps WHERE run_id = ? ORDER BY seq",
            (run_id,),
        ).fetchall()
        return [_step_from_row(row) for row in rows]

    def start_step(self, run_id: int, seq: int) -> None:
        self._exec(
            "UPDATE steps SET status = ?, started = ?, finished = NULL, attempts = attempts + 1 "
            "WHERE run_id = ? AND seq = ?",
            (StepStatus.RUNNING, _now(), run_id, seq),
        )

    def finish_step(self, run_id: int, seq: int, ok: bool, detail: dict[str, Any]) -> None:
        status = StepStatus.DONE if ok else StepStatus.FAILED
        self._exec(
            "UPDATE steps SET status = ?, finished = ?, detail = ? WHERE run_id = ? AND seq = ?",
            (status, _now(), json.dumps(detail), run_id, seq),
        )

    def note_detail(self, run_id: int, seq: int, detail: dict[str, Any]) -> None:
        """Facts about a step still running (the command's process group)."""
        self._exec(
            "UPDATE steps SET detail = ? WHERE run_id = ? AND seq = ?",
            (json.dumps(detail), run_id, seq),
        )

    def append_output(self, run_id: int, seq: int, line: str) -> None:
        """Keep one more line of the step's command output (up to ``MAX_OUTPUT`` bytes)."""
        self._exec(
            "UPDATE steps SET output = output || ? WHERE run_id = ? AND seq = ? "
            "AND length(output) < ?",
            (line.rstrip("\n") + "\n", run_id, seq, MAX_OUTPUT),
        )

    def mark_output(self, run_id: int, seq: int, text: str) -> None:
        """A line of l3ha's own in the output (an attempt starting, the exit code)."""
        self.append_output(run_id, seq, f"# l3ha: {text}")


def _run_from_row(row: tuple[Any, ...]) -> RunRecord:
    return RunRecord(
        int(row[0]), str(row[1]), RunStatus(row[2]), json.loads(row[3]), str(row[4]), int(row[5])
    )


def _step_from_row(row: tuple[Any, ...]) -> StepRecord:
    key = StepKey(str(row[1]), Phase(row[2]), str(row[3]))
    return StepRecord(
        int(row[0]),
        key,
        StepStatus(row[4]),
        int(row[5]),
        json.loads(row[6]),
        str(row[7]),
        row[8],
        row[9],
    )
