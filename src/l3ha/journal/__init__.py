"""The durable journal of operations and moves. I/O: a SQLite file in the state dir.

Every operation that changes the cloud is recorded here: the operation when it
starts, every planned move, the *intent* of a move before its first write,
each step after it happens, and the outcome at the end. After a crash
(``kill -9`` at any point) ``Journal.unfinished_operations()`` lists what was
cut short, and ``l3ha.executor.recovery`` finishes it from the cloud's actual
state. After a power loss recovery judges the moves whose last steps were not
yet on disk from the cloud's state anyway.

The package: ``records`` (what is stored, pure), ``statedir`` (where, and
file modes), ``store`` (the writer, ``Journal``) and ``readers`` (read-only
views for other processes). Everything is importable from ``l3ha.journal``.
"""

from __future__ import annotations

from l3ha.journal.readers import interrupted_operations, last_step_id, read_steps_since
from l3ha.journal.records import (
    MoveRecord,
    MoveStep,
    ObjectKind,
    OperationRecord,
    OperationStatus,
    StartedBy,
    StepEvent,
)
from l3ha.journal.statedir import DB_NAME, STATE_DIR_ENV, default_state_dir
from l3ha.journal.store import Journal

__all__ = [
    "DB_NAME",
    "STATE_DIR_ENV",
    "Journal",
    "MoveRecord",
    "MoveStep",
    "ObjectKind",
    "OperationRecord",
    "OperationStatus",
    "StartedBy",
    "StepEvent",
    "default_state_dir",
    "interrupted_operations",
    "last_step_id",
    "read_steps_since",
]
