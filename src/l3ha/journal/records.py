"""What the journal holds: operation and move records, step names, row decoding. Pure.

``OP_SELECT`` / ``MOVE_SELECT`` are the queries whose rows ``operation_from_row``
and ``move_from_row`` decode; both the writer (``l3ha.journal.store``) and the
read-only readers (``l3ha.journal.readers``) use them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum


class OperationStatus(StrEnum):
    """Where an operation stands."""

    RUNNING = "running"
    DONE = "done"  # every move ended moved, pending or skipped
    FAILED = "failed"  # at least one move failed or left a router unhosted
    RECOVERED = "recovered"  # an interrupted operation finished by recovery


class MoveStep(StrEnum):
    """The last thing that happened to one move, in order."""

    PLANNED = "planned"  # in the plan, nothing written yet
    INTENT = "intent"  # about to write (target chosen)
    UNBOUND = "unbound"  # removed from the source
    BOUND = "bound"  # bound to the target
    VERIFIED = "verified"  # bindings read back as intended
    DONE = "done"  # outcome recorded (see ``outcome``)


class StartedBy(StrEnum):
    """Who started an operation (journals written before this was recorded: ``""``)."""

    COMMAND = "command"  # a one-shot l3ha command (or the openstack l3ha plugin)
    DAEMON = "daemon"  # l3ha watch
    ROLLING = "rolling"  # l3ha rolling


class ObjectKind(StrEnum):
    """What a move places: the kind of placement it belongs to."""

    ROUTER = "router"  # a router on L3 agents
    NETWORK = "network"  # a network on DHCP agents
    GATEWAY = "gateway"  # a router's gateway on OVN gateway chassis (priorities)


@dataclass(frozen=True, slots=True)
class MoveRecord:
    """One move as the journal holds it: ``object_id`` is a router's or a network's id
    (``object_kind``)."""

    id: int
    operation_id: int
    seq: int
    object_id: str
    source: str | None
    target: str | None
    kind: str
    reason: str
    step: MoveStep
    outcome: str | None
    created: str
    updated: str
    detail: str
    object_kind: ObjectKind = ObjectKind.ROUTER

    @property
    def finished(self) -> bool:
        return self.outcome is not None

    @property
    def router_id(self) -> str:
        """The object's id (the name every router-side reader uses)."""
        return self.object_id


@dataclass(frozen=True, slots=True)
class OperationRecord:
    """One operation as the journal holds it."""

    id: int
    kind: str
    args: Mapping[str, object]
    started: str
    finished: str | None
    status: OperationStatus
    pid: int
    host: str
    summary: str
    started_by: str = ""  # a StartedBy value; "" when the journal did not record it


@dataclass(frozen=True, slots=True)
class StepEvent:
    """One recorded step of one move, with its operation, for watchers such as the probe."""

    id: int
    operation_id: int
    operation_kind: str
    router_id: str
    move_kind: str
    step: str  # a MoveStep value, or "done:OUTCOME"
    source: str | None
    target: str | None
    at: str
    detail: str


_OP_COLUMNS = "id, kind, args, started, finished, status, pid, host, summary"
OP_SELECT = f"SELECT {_OP_COLUMNS} FROM operations"
#: ``OP_SELECT`` with who started each operation: only for a journal the writer opened
#: (and so brought up to date); the read-only readers use ``OP_SELECT``.
OP_SELECT_STARTED_BY = f"SELECT {_OP_COLUMNS}, started_by FROM operations"
MOVE_SELECT = (
    "SELECT id, operation_id, seq, object_id, source, target, kind, reason, step, outcome,"
    " created, updated, detail, object_kind FROM moves"
)


def operation_from_row(row: tuple[object, ...]) -> OperationRecord:
    op_id, kind, args, started, finished, status, pid, host, summary, *started_by = row
    return OperationRecord(
        id=int(str(op_id)),
        kind=str(kind),
        args=json.loads(str(args)),
        started=str(started),
        finished=_optional(finished),
        status=OperationStatus(str(status)),
        pid=int(str(pid)),
        host=str(host),
        summary=str(summary),
        started_by=str(started_by[0]) if started_by else "",
    )


def move_from_row(row: tuple[object, ...]) -> MoveRecord:
    """A ``MOVE_SELECT`` row."""
    (
        mv_id,
        op_id,
        seq,
        object_id,
        source,
        target,
        kind,
        reason,
        step,
        outcome,
        created,
        updated,
        detail,
        object_kind,
    ) = row
    return MoveRecord(
        id=int(str(mv_id)),
        operation_id=int(str(op_id)),
        seq=int(str(seq)),
        object_id=str(object_id),
        source=_optional(source),
        target=_optional(target),
        kind=str(kind),
        reason=str(reason),
        step=MoveStep(str(step)),
        outcome=_optional(outcome),
        created=str(created),
        updated=str(updated),
        detail=str(detail),
        object_kind=ObjectKind(str(object_kind)),
    )


def _optional(value: object) -> str | None:
    return None if value is None else str(value)
