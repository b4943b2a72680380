"""The journal writer: operations, moves, steps and outcomes in SQLite. I/O: the journal file.

``Journal`` is shared by the threads of one process. Writes are
group-committed (WAL): operation starts and ends and every *intent* are
fsynced before the call returns, so no cloud write happens without a durable
intent; the steps after it and the outcomes are committed without waiting
for the disk.

Each move records the kind of object it places (``ObjectKind``: a router, a
network) and that object's id. The schema carries a version
(``SCHEMA_VERSION``, SQLite's ``user_version``): a journal of an older l3ha is
brought up to date when it is opened, one of a newer l3ha is refused with a
one-line error (nothing is written to it).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

from l3ha.clock import Clock, SystemClock
from l3ha.errors import BadInputError
from l3ha.journal.history import move_row, operation_row
from l3ha.journal.records import (
    MOVE_SELECT,
    OP_SELECT,
    OP_SELECT_STARTED_BY,
    MoveRecord,
    MoveStep,
    ObjectKind,
    OperationRecord,
    OperationStatus,
    StartedBy,
    move_from_row,
    operation_from_row,
)
from l3ha.journal.statedir import DB_NAME, default_state_dir, open_database, process_alive
from l3ha.model import Move

T = TypeVar("T")

#: Operations running in this process, as (journal path, operation id).
_RUNNING: set[tuple[str, int]] = set()
_RUNNING_LOCK = threading.Lock()

_SCHEMA = """
CREATE TABLE IF NOT EXISTS operations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    args TEXT NOT NULL,
    started TEXT NOT NULL,
    finished TEXT,
    status TEXT NOT NULL,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    summary TEXT NOT NULL DEFAULT '',
    started_by TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS moves (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    operation_id INTEGER NOT NULL REFERENCES operations(id),
    seq INTEGER NOT NULL,
    object_kind TEXT NOT NULL DEFAULT 'router',
    object_id TEXT NOT NULL,
    source TEXT,
    target TEXT,
    kind TEXT NOT NULL,
    reason TEXT NOT NULL,
    step TEXT NOT NULL,
    outcome TEXT,
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS moves_by_operation ON moves(operation_id, seq);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    move_id INTEGER NOT NULL REFERENCES moves(id),
    step TEXT NOT NULL,
    at TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT ''
);
"""


class _Request(Generic[T]):
    """One writer's work waiting for (or done by) a group commit."""

    def __init__(self, work: Callable[[sqlite3.Connection], T], durable: bool) -> None:
        self.work = work
        self.durable = durable
        self.done = False
        self.value: T | None = None
        self.error: BaseException | None = None

    def result(self) -> T:
        if self.error is not None:
            raise self.error
        return cast(T, self.value)


class Journal:
    """The journal database; safe to share between threads of one process."""

    def __init__(
        self,
        state_dir: Path | None = None,
        clock: Clock | None = None,
        started_by: StartedBy = StartedBy.COMMAND,
    ) -> None:
        """``started_by``: recorded with every operation this instance begins."""
        self.started_by = started_by
        self.state_dir = state_dir if state_dir is not None else default_state_dir()
        self.path = self.state_dir / DB_NAME
        self._clock: Clock = clock or SystemClock()
        _refuse_newer(self.path)
        self._db = open_database(self.state_dir, DB_NAME, _SCHEMA, "journal")
        try:
            _upgrade(self._db, self.path)
            _add_started_by(self._db)
        except BaseException:
            self._db.close()
            raise
        self._lock = threading.Lock()
        self._queue_cv = threading.Condition(threading.Lock())
        self._queue: list[_Request[Any]] = []
        self._committing = False
        self._mine: set[int] = set()  # operations this instance began and runs

    def close(self) -> None:
        for operation_id in list(self._mine):
            self._set_running(operation_id, False)
        with self._lock:
            self._db.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _now(self) -> str:
        return self._clock.wall().isoformat(timespec="milliseconds")

    def _write(self, work: Callable[[sqlite3.Connection], T], durable: bool = True) -> T:
        """Run ``work`` in a transaction; returns once it is committed.

        ``durable``: the commit is fsynced before this returns (it survives a power
        loss, not only a killed process); every earlier commit becomes durable with it.

        Group commit: writers that arrive while a commit is running are committed
        together by the next one, so concurrent moves share an fsync.
        """
        request: _Request[T] = _Request(work, durable)
        with self._queue_cv:
            self._queue.append(request)
            while not request.done:
                if self._committing:
                    self._queue_cv.wait()
                    continue
                batch, self._queue = self._queue, []
                self._committing = True
                self._queue_cv.release()
                try:
                    self._commit(batch)
                finally:
                    self._queue_cv.acquire()
                    self._committing = False
                    self._queue_cv.notify_all()
        return request.result()

    def _commit(self, batch: list[_Request[Any]]) -> None:
        durable = any(r.durable for r in batch)
        with self._lock:
            try:
                self._db.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
                with _immediate(self._db):
                    for request in batch:
                        request.value = request.work(self._db)
            except BaseException as exc:
                for request in batch:
                    request.error = exc
            finally:
                for request in batch:
                    request.done = True

    # --- writing ---------------------------------------------------------

    def begin_operation(
        self,
        kind: str,
        args: Mapping[str, object],
        moves: Sequence[Move] = (),
        objects: ObjectKind = ObjectKind.ROUTER,
    ) -> tuple[int, list[int]]:
        """Record a new running operation and its planned moves (step ``planned``);
        ``objects``: what the moves place (a move's ``router_id`` is that object's id).

        Returns the operation id and the move ids, in plan order.
        """
        now = self._now()

        def work(db: sqlite3.Connection) -> tuple[int, list[int]]:
            cur = db.execute(
                "INSERT INTO operations (kind, args, started, status, pid, host, started_by)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    kind,
                    json.dumps(dict(args), default=str, sort_keys=True),
                    now,
                    OperationStatus.RUNNING.value,
                    os.getpid(),
                    socket.gethostname(),
                    self.started_by.value,
                ),
            )
            op_id = int(cur.lastrowid or 0)
            return op_id, [
                self._insert_move(db, op_id, seq, m, objects=objects, now=now)
                for seq, m in enumerate(moves)
            ]

        op_id, move_ids = self._write(work)
        self._set_running(op_id, True)
        return op_id, move_ids

    def _set_running(self, operation_id: int, running: bool) -> None:
        key = (str(self.path.resolve()), operation_id)
        with _RUNNING_LOCK:
            if running:
                _RUNNING.add(key)
                self._mine.add(operation_id)
            else:
                _RUNNING.discard(key)
                self._mine.discard(operation_id)

    def abandon(self, operation_id: int) -> None:
        """This process stops working on an operation without finishing it.

        It becomes an interrupted operation that ``unfinished_operations`` lists
        (closing the journal does the same for every operation it began).
        """
        self._set_running(operation_id, False)

    @staticmethod
    def _insert_move(
        db: sqlite3.Connection, op_id: int, seq: int, move: Move, *, objects: ObjectKind, now: str
    ) -> int:
        cur = db.execute(
            "INSERT INTO moves (operation_id, seq, object_kind, object_id, source, target, kind,"
            " reason, step, created, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                op_id,
                seq,
                objects.value,
                move.router_id,
                move.source,
                move.target,
                move.kind.value,
                move.reason,
                MoveStep.PLANNED.value,
                now,
                now,
            ),
        )
        return int(cur.lastrowid or 0)

    def record_step(
        self, move_id: int, step: MoveStep, *, target: str | None = None, detail: str = ""
    ) -> None:
        """Record that ``step`` happened (``intent``: before the first write, fsynced)."""
        now = self._now()

        def work(db: sqlite3.Connection) -> None:
            db.execute(
                "UPDATE moves SET step=?, target=COALESCE(?, target), updated=?, detail=?"
                " WHERE id=?",
                (step.value, target, now, detail, move_id),
            )
            _event(db, move_id, step.value, now, detail)

        self._write(work, durable=step is MoveStep.INTENT)

    def record_outcome(
        self, move_id: int, outcome: str, detail: str = "", *, target: str | None = None
    ) -> None:
        """Record how one move ended; its step becomes ``done``."""
        now = self._now()

        def work(db: sqlite3.Connection) -> None:
            db.execute(
                "UPDATE moves SET step=?, outcome=?, updated=?, detail=?,"
                " target=COALESCE(?, target) WHERE id=?",
                (MoveStep.DONE.value, outcome, now, detail, target, move_id),
            )
            _event(db, move_id, f"{MoveStep.DONE.value}:{outcome}", now, detail)

        self._write(work, durable=False)

    def finish_operation(
        self, operation_id: int, status: OperationStatus, summary: str = ""
    ) -> None:
        """Mark an operation finished."""
        now = self._now()
        self._write(
            lambda db: db.execute(
                "UPDATE operations SET finished=?, status=?, summary=? WHERE id=?",
                (now, status.value, summary, operation_id),
            )
        )
        self._set_running(operation_id, False)

    # --- reading ---------------------------------------------------------

    def _query(self, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
        with self._lock:
            return list(self._db.execute(sql, params).fetchall())

    def operation(self, operation_id: int) -> OperationRecord:
        rows = self._query(OP_SELECT_STARTED_BY + " WHERE id=?", (operation_id,))
        if not rows:
            raise BadInputError(f"no operation {operation_id} in the journal {self.path}")
        return operation_from_row(rows[0])

    def moves(self, operation_id: int) -> list[MoveRecord]:
        """Every move of one operation, in plan order."""
        rows = self._query(MOVE_SELECT + " WHERE operation_id=? ORDER BY seq, id", (operation_id,))
        return [move_from_row(r) for r in rows]

    def events(self, move_id: int) -> list[tuple[str, str, str]]:
        """(step, at, detail) of one move, oldest first."""
        rows = self._query(
            "SELECT step, at, detail FROM events WHERE move_id=? ORDER BY id", (move_id,)
        )
        return [(str(s), str(a), str(d)) for s, a, d in rows]

    def event_count(self) -> int:
        """How many steps the journal holds in total."""
        return int(str(self._query("SELECT COUNT(*) FROM events")[0][0]))

    def unfinished_operations(self, include_live: bool = False) -> list[OperationRecord]:
        """Operations never marked finished, oldest first.

        Unless ``include_live``, an operation still in progress is left out: one
        another live process on this host began, or one this process is running
        (an operation this process began and then abandoned is listed).
        """
        rows = self._query(OP_SELECT + " WHERE finished IS NULL ORDER BY id")
        ops = [operation_from_row(r) for r in rows]
        if include_live:
            return ops
        return [o for o in ops if not self._in_progress(o)]

    def _in_progress(self, op: OperationRecord) -> bool:
        if op.host != socket.gethostname():
            return False
        if op.pid == os.getpid():
            with _RUNNING_LOCK:
                return (str(self.path.resolve()), op.id) in _RUNNING
        return process_alive(op.pid)

    def history(self, last: int | None = None) -> list[OperationRecord]:
        """Operations, newest first (``last``: only that many)."""
        if last is not None and last < 1:
            raise BadInputError(f"--last must be at least 1, not {last}")
        sql = OP_SELECT_STARTED_BY + " ORDER BY id DESC LIMIT ?"  # LIMIT -1: every one
        return [operation_from_row(r) for r in self._query(sql, (-1 if last is None else last,))]

    def history_rows(self, last: int | None = None) -> list[dict[str, object]]:
        """``history`` as flat rows (one per move) for ``l3ha history --moves``."""
        return [move_row(op, mv) for op in self.history(last) for mv in self.moves(op.id)]

    def operation_rows(self, last: int | None = None) -> list[dict[str, object]]:
        """``history`` as rows, one per operation with its move counts (``l3ha history``)."""
        ops = self.history(last)
        counts: dict[int, dict[str, int]] = {op.id: {} for op in ops}
        for op_id, outcome, n in self._query(
            "SELECT operation_id, COALESCE(outcome, step), COUNT(*) FROM moves"
            " WHERE operation_id >= ? GROUP BY 1, 2 ORDER BY 1, 2",
            (min(counts, default=0),),
        ):
            by_outcome = counts.get(int(str(op_id)))
            if by_outcome is not None:
                by_outcome[str(outcome)] = int(str(n))
        return [operation_row(op, counts[op.id]) for op in ops]


def _event(db: sqlite3.Connection, move_id: int, step: str, at: str, detail: str) -> None:
    """Append one step of a move to its events."""
    db.execute(
        "INSERT INTO events (move_id, step, at, detail) VALUES (?, ?, ?, ?)",
        (move_id, step, at, detail),
    )


#: The journal's schema: 1 had no version and kept every move's object in ``router_id``;
#: 2 records each move's ``object_kind`` and ``object_id``.
SCHEMA_VERSION = 2


def _refuse_newer(path: Path) -> None:
    """``BadInputError`` (one line) for a journal a newer l3ha wrote; read-only, so such a
    journal is left exactly as it is."""
    if not path.exists():
        return
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)
        try:
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise BadInputError(f"cannot open journal {path}: {exc}") from exc
    if version > SCHEMA_VERSION:
        raise BadInputError(
            f"journal {path} has schema version {version}, newer than this l3ha reads "
            f"({SCHEMA_VERSION}): use the l3ha that wrote it or a newer one"
        )


def _add_started_by(db: sqlite3.Connection) -> None:
    """Add ``operations.started_by`` to a journal written before it was recorded: an
    addition within schema 2 (an l3ha that does not know the column never reads it, and
    its inserts leave it ``''``)."""
    if _has_started_by(db):
        return
    with _immediate(db):  # another process may be adding it too
        if not _has_started_by(db):
            db.execute("ALTER TABLE operations ADD COLUMN started_by TEXT NOT NULL DEFAULT ''")


def _has_started_by(db: sqlite3.Connection) -> bool:
    return "started_by" in {str(row[1]) for row in db.execute("PRAGMA table_info(operations)")}


def _upgrade(db: sqlite3.Connection, path: Path) -> None:
    """Bring an older journal's schema up to ``SCHEMA_VERSION`` (a newer one is refused)."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:  # written meanwhile by a newer l3ha
        _refuse_newer(path)
    if version == SCHEMA_VERSION:
        return
    with _immediate(db):  # one process upgrades; the others wait, then see it done
        columns = {str(row[1]) for row in db.execute("PRAGMA table_info(moves)")}
        if "router_id" in columns:  # version 1: DHCP moves kept their network there
            db.execute("ALTER TABLE moves RENAME COLUMN router_id TO object_id")
            db.execute("ALTER TABLE moves ADD COLUMN object_kind TEXT NOT NULL DEFAULT 'router'")
            db.execute(
                "UPDATE moves SET object_kind = ? WHERE operation_id IN"
                " (SELECT id FROM operations WHERE kind LIKE 'dhcp-%')",
                (ObjectKind.NETWORK.value,),
            )
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


@contextlib.contextmanager
def _immediate(db: sqlite3.Connection) -> Iterator[None]:
    """A write transaction taken at once (``BEGIN IMMEDIATE``), rolled back on any error
    (the error raised, not one of the rollback)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            if db.in_transaction:
                db.execute("ROLLBACK")
        raise
