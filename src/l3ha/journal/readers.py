"""Read-only views of the journal for other processes. I/O: opens the SQLite file read-only.

Each call opens the database read-only and closes it again, so a watcher
(the probe, ``l3ha`` telling the operator about an interrupted operation)
never holds it open and never creates it.
"""

from __future__ import annotations

import socket
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from l3ha.journal.records import OP_SELECT, OperationRecord, StepEvent, operation_from_row
from l3ha.journal.statedir import DB_NAME, process_alive

T = TypeVar("T")


def read_steps_since(state_dir: Path, after_id: int, limit: int = 1000) -> list[StepEvent]:
    """Steps recorded after event ``after_id``, oldest first; read-only, [] if no journal yet."""
    return _read_only(state_dir, lambda db: _steps_after(db, after_id, limit), [])


def _steps_after(db: sqlite3.Connection, after_id: int, limit: int) -> list[StepEvent]:
    columns = {str(row[1]) for row in db.execute("PRAGMA table_info(moves)")}
    object_id = "router_id" if "router_id" in columns else "object_id"  # schema 1 or 2
    rows = db.execute(
        f"SELECT e.id, m.operation_id, o.kind, m.{object_id}, m.kind, e.step, m.source,"
        " m.target, e.at,"
        " e.detail FROM events e JOIN moves m ON m.id = e.move_id"
        " JOIN operations o ON o.id = m.operation_id WHERE e.id > ? ORDER BY e.id LIMIT ?",
        (after_id, limit),
    ).fetchall()
    return [
        StepEvent(int(i), int(op), str(k), str(r), str(mk), str(st), src, t, str(at), str(d))
        for i, op, k, r, mk, st, src, t, at, d in rows
    ]


def interrupted_operations(state_dir: Path) -> list[OperationRecord]:
    """Unfinished operations whose process is gone; read-only, [] if no journal exists.

    For commands that only want to tell the operator (a new ``Journal`` would
    create the state dir); ``Journal.unfinished_operations`` is the writer's view.
    """
    query = OP_SELECT + " WHERE finished IS NULL ORDER BY id"
    rows: list[Any] = _read_only(state_dir, lambda db: db.execute(query).fetchall(), [])
    here = socket.gethostname()
    ops = [operation_from_row(r) for r in rows]
    return [o for o in ops if o.host != here or not process_alive(o.pid)]


def last_step_id(state_dir: Path) -> int:
    """The id of the newest recorded step (0 when there is none or no journal)."""
    query = "SELECT COALESCE(MAX(id), 0) FROM events"
    return _read_only(state_dir, lambda db: int(db.execute(query).fetchone()[0]), 0)


def _read_only(state_dir: Path, read: Callable[[sqlite3.Connection], T], empty: T) -> T:
    """``read(db)`` of the journal in ``state_dir``, opened read-only for this call only;
    ``empty`` when there is none."""
    path = state_dir / DB_NAME
    if not path.exists():
        return empty
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        return read(db)
    finally:
        db.close()
