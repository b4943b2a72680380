"""Read-only views of the journal for other processes. I/O: opens the SQLite file read-only.

Each call opens the database read-only and closes it again, so a watcher
(the probe, ``l3ha`` telling the operator about an interrupted operation)
never holds it open and never creates it.
"""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path

from l3ha.journal.records import OP_SELECT, OperationRecord, StepEvent, operation_from_row
from l3ha.journal.statedir import DB_NAME, process_alive


def read_steps_since(state_dir: Path, after_id: int, limit: int = 1000) -> list[StepEvent]:
    """Steps recorded after event ``after_id``, oldest first; read-only, [] if no journal yet.

    Opens the database read-only on every call, so a watcher in another process
    never holds it open and never creates it.
    """
    path = state_dir / DB_NAME
    if not path.exists():
        return []
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        columns = {str(row[1]) for row in db.execute("PRAGMA table_info(moves)")}
        object_id = "router_id" if "router_id" in columns else "object_id"  # schema 1 or 2
        rows = db.execute(
            f"SELECT e.id, m.operation_id, o.kind, m.{object_id}, m.kind, e.step, m.source,"
            " m.target, e.at,"
            " e.detail FROM events e JOIN moves m ON m.id = e.move_id"
            " JOIN operations o ON o.id = m.operation_id WHERE e.id > ? ORDER BY e.id LIMIT ?",
            (after_id, limit),
        ).fetchall()
    finally:
        db.close()
    return [
        StepEvent(int(i), int(op), str(k), str(r), str(mk), str(st), src, t, str(at), str(d))
        for i, op, k, r, mk, st, src, t, at, d in rows
    ]


def interrupted_operations(state_dir: Path) -> list[OperationRecord]:
    """Unfinished operations whose process is gone; read-only, [] if no journal exists.

    For commands that only want to tell the operator (a new ``Journal`` would
    create the state dir); ``Journal.unfinished_operations`` is the writer's view.
    """
    path = state_dir / DB_NAME
    if not path.exists():
        return []
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        rows = db.execute(OP_SELECT + " WHERE finished IS NULL ORDER BY id").fetchall()
    finally:
        db.close()
    here = socket.gethostname()
    ops = [operation_from_row(r) for r in rows]
    return [o for o in ops if o.host != here or not process_alive(o.pid)]


def last_step_id(state_dir: Path) -> int:
    """The id of the newest recorded step (0 when there is none or no journal)."""
    path = state_dir / DB_NAME
    if not path.exists():
        return 0
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        row = db.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()
    finally:
        db.close()
    return int(row[0])
