"""The journal's records as the rows ``l3ha history`` prints. Pure.

One row per operation (what, who started it, when, outcome, how its moves
ended) and one row per move (``--moves``). Agent changes (the enable and
disable of drains and undrains) have no moves: their row names the host and
the new admin state.

Names: an operation records the host names of the agents and the names of
the routers (networks) it moves (``recorded_names``, in its arguments as ``names``), so a
move's row shows ``net-2`` and ``web-router``; the ids are in ``*_id``
columns (``--long``). Operations recorded without names show ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from l3ha.journal.records import MoveRecord, OperationRecord
from l3ha.model import Agent

#: The key of an operation's arguments that holds its names (id -> name).
NAMES = "names"

#: Columns of the per-operation rows, in order.
OPERATION_COLUMNS = (
    "operation",
    "what",
    "subject",
    "started_by",
    "started",
    "finished",
    "outcome",
    "moves",
    "results",
)
#: What a move places, by its ``ObjectKind`` (each a column of the per-move rows).
OBJECT_COLUMNS = ("router", "network", "gateway")
#: Columns of the per-move rows, in order (``network`` only for DHCP moves, ``gateway``
#: only for OVN gateway moves).
MOVE_COLUMNS = (
    "operation",
    "kind",
    "started",
    "status",
    *OBJECT_COLUMNS,
    "move",
    "source",
    "target",
    "step",
    "outcome",
    "reason",
    "detail",
    "updated",
)
#: The id columns ``--long`` adds to the per-move rows.
MOVE_ID_COLUMNS = (*(f"{c}_id" for c in OBJECT_COLUMNS), "source_id", "target_id")
#: The columns only ``--long`` shows: the ids, and what the operation's row already says.
MOVE_LONG_COLUMNS = (*MOVE_ID_COLUMNS, "started", "status", "detail")


class _Named(Protocol):
    @property
    def name(self) -> str: ...


def recorded_names(
    agents: Iterable[Agent], objects: Mapping[str, _Named], moved: Iterable[str]
) -> dict[str, str]:
    """What an operation of any kind records as its ``names``: every agent's host, and the
    name of every object (``objects`` by id) it moves that has one."""
    names = {agent.id: agent.host for agent in agents}
    for object_id in moved:
        found = objects.get(object_id)
        if found is not None and found.name:
            names[object_id] = found.name
    return names


def operation_row(op: OperationRecord, counts: Mapping[str, int]) -> dict[str, object]:
    """One operation; ``counts``: its moves by outcome (or by last step while unfinished)."""
    return {
        "operation": op.id,
        "what": _what(op),
        "subject": _subject(op.args),
        "started_by": op.started_by or "unrecorded",
        "started": op.started,
        "finished": op.finished or "",
        "outcome": op.status.value,
        "moves": sum(counts.values()),
        "results": ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())),
    }


def operation_record(op: OperationRecord, counts: Mapping[str, int]) -> dict[str, object]:
    """One operation for ``history show``: its row, the arguments it ran with and its summary."""
    return {
        **operation_row(op, counts),
        "arguments": {k: v for k, v in op.args.items() if v is not None and k != NAMES},
        "summary": op.summary,
        "pid": op.pid,
        "host": op.host,
    }


def move_row(op: OperationRecord, mv: MoveRecord) -> dict[str, object]:
    """One move of ``op``, with names where ``op`` recorded them."""
    recorded = op.args.get(NAMES)
    names: Mapping[str, object] = recorded if isinstance(recorded, Mapping) else {}

    def name(object_id: str | None) -> str:
        return str(names.get(object_id) or object_id) if object_id else ""

    return {
        "operation": op.id,
        "kind": op.kind,
        "started": op.started,
        "status": op.status.value,
        mv.object_kind.value: name(mv.object_id),  # one of OBJECT_COLUMNS
        f"{mv.object_kind.value}_id": mv.object_id,
        "move": mv.kind,
        "source": name(mv.source),
        "source_id": mv.source or "",
        "target": name(mv.target),
        "target_id": mv.target or "",
        "step": mv.step.value,
        "outcome": mv.outcome or "",
        "reason": mv.reason,
        "detail": mv.detail,
        "updated": mv.updated,
    }


def _what(op: OperationRecord) -> str:
    """The operation's kind; an agent change says what it did to the agent."""
    if not op.kind.endswith("agent-state"):
        return op.kind
    state = op.args.get("admin_state_up")
    change = ("enable" if state else "disable") if isinstance(state, bool) else None
    prefix = "dhcp-" if op.kind.startswith("dhcp-") else ""
    return f"{prefix}{change}-agent" if change else op.kind


def _subject(args: Mapping[str, object]) -> str:
    """What the operation acted on, as the command named it: hosts or agents."""
    for key in ("host", "hosts", "agent", "agents", "source", "reason"):  # reason: a halt
        value = args.get(key)
        if isinstance(value, list | tuple) and value:
            return ", ".join(str(v) for v in value)
        if value:
            return str(value)
    return ""


def recorded_names_of(ops: Sequence[OperationRecord]) -> dict[str, str]:
    """The names the operations recorded (id -> name), merged."""
    names: dict[str, str] = {}
    for op in ops:
        recorded = op.args.get(NAMES)
        if isinstance(recorded, Mapping):
            names.update({str(k): str(v) for k, v in recorded.items() if v})
    return names


def with_names(text: str, names: Mapping[str, str]) -> str:
    """``text`` with every recorded id in it replaced by its name (hosts, routers)."""
    for object_id, name in names.items():
        if object_id in text:
            text = text.replace(object_id, name)
    return text


def router_label(router_id: str, names: Mapping[str, str]) -> str:
    """``web (0597aab6)``: a router's recorded name with the start of its id (names are not
    unique; the id's start is, and commands take it); the bare id when none is recorded."""
    name = names.get(router_id)
    return f"{name} ({router_id[:8]})" if name else router_id
