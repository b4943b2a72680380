"""Structured log events of the daemon: one event per decision, with its reason. I/O: logging.

``event(name, **fields)`` logs through the ``l3ha.watch`` logger. An event
about an agent or an object names it twice: its id (the field itself) and its
name beside it (``named``: ``agent``/``agent_host``, ``network``/``network_name``),
so a reader needs no second lookup and a program keeps the id (a verdict
event's ``agent`` is the host, as it always was, with ``agent_id`` beside it).
What both kinds' halves of a cycle report the same way is here once:
``log_verdict_changes`` (one event per agent whose verdict changed), ``log_move`` (one
event per move, any kind) and ``moves_by_outcome`` (a cycle's moves per action and
outcome, for the metrics).
``configure(fmt)`` installs a handler on stderr that writes each record as
text (``2026-12-01T10:00:00Z INFO evacuate agent=net-3 reason=...``) or as
one JSON object per line (``--log-format json``), fields included.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, TextIO

from l3ha.daemon.decide import Decision
from l3ha.dhcp_model import DhcpSnapshot
from l3ha.health import CALM_VERDICTS, Verdict
from l3ha.model import Snapshot
from l3ha.operations.request import OperationResult
from l3ha.ovn_model import OvnSnapshot

log = logging.getLogger("l3ha.watch")

_FIELDS = "l3ha_fields"


def event(name: str, level: int = logging.INFO, /, **fields: object) -> None:
    """Log one event with its fields."""
    log.log(level, "%s", name, extra={_FIELDS: fields})


def named(
    field: str, object_id: str | None, names: Mapping[str, str], suffix: str = "host"
) -> dict[str, object]:
    """The fields that name one thing of an event: ``field`` its id, ``field_suffix`` its
    name (a host, a router's or network's name; "" when unknown)."""
    name = names.get(object_id, "") if object_id else ""
    return {field: object_id, f"{field}_{suffix}": name}


def host_names(snapshot: Snapshot | DhcpSnapshot | OvnSnapshot | None) -> dict[str, str]:
    """Agent id -> host, from any kind's snapshot (none: nothing known)."""
    if isinstance(snapshot, OvnSnapshot):
        return {c.id: c.host for c in snapshot.chassis}
    return {a.id: a.host for a in snapshot.agents} if snapshot is not None else {}


def log_verdict_changes(
    name: str,
    verdicts: Mapping[str, Verdict],
    before: Mapping[str, Verdict],
    hosts: Mapping[str, str],
) -> None:
    """One ``name`` event per agent whose verdict is not what it was ``before`` (any kind
    of agent): ``agent`` its host, ``agent_id``, ``verdict`` and ``was``; a warning unless
    the new verdict is calm."""
    for agent_id, verdict in sorted(verdicts.items()):
        was = before.get(agent_id)
        if was is not verdict:
            event(
                name,
                logging.INFO if verdict in CALM_VERDICTS else logging.WARNING,
                agent=hosts.get(agent_id, agent_id),
                agent_id=agent_id,
                verdict=verdict.value,
                was=was.value if was else None,
            )


def moves_by_outcome(
    results: Iterable[tuple[Decision, OperationResult[Any, Any]]],
) -> dict[tuple[str, str], int]:
    """Moves per (action, outcome) of a cycle's results, any kind, for the metrics."""
    counts: dict[tuple[str, str], int] = {}
    for decision, result in results:
        for executed in result.executed:
            for move in executed.run.results:
                key = (decision.action.value, move.outcome.value)
                counts[key] = counts.get(key, 0) + 1
    return counts


def log_move(
    decision: Decision, move: Any, snapshot: Any, field: str = "router", name: str = "move"
) -> None:
    """One move event: the moved object (``field``: its id, and its name beside), the
    agents' ids and hosts, the outcome; its times: ``write_seconds`` (its writes, read
    back), ``seconds`` (until it finished), and since the run started ``written_after``
    and ``finished_after``."""
    planned, object_id = move.move, move.object_id
    found = getattr(snapshot, f"{field}s_by_id").get(object_id)
    hosts = host_names(snapshot)
    event(
        name,
        action=decision.action.value,
        **named(field, object_id, {object_id: found.name} if found else {}, "name"),
        kind=planned.kind.value,
        **named("source", planned.source, hosts),
        **named("target", move.target or planned.target, hosts),
        outcome=move.outcome.value,
        reason=move.reason,
        write_seconds=round(move.write_seconds, 3),
        seconds=round(move.seconds, 3),
        written_after=round(move.started_after + move.write_seconds, 3)
        if move.write_seconds
        else None,
        finished_after=round(move.started_after + move.seconds, 3),
    )


def _timestamp(record: logging.LogRecord) -> str:
    moment = datetime.fromtimestamp(record.created, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _fields(record: logging.LogRecord) -> dict[str, object]:
    fields = getattr(record, _FIELDS, None)
    return dict(fields) if isinstance(fields, dict) else {}


class TextFormatter(logging.Formatter):
    """``TIME LEVEL event key=value ...``"""

    def format(self, record: logging.LogRecord) -> str:
        parts = [_timestamp(record), record.levelname, record.getMessage()]
        parts += [f"{k}={_text(v)}" for k, v in _fields(record).items()]
        line = " ".join(parts)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``ts``, ``level``, ``logger``, ``event`` and the fields."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, object] = {
            "ts": _timestamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        doc.update(_fields(record))
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str, sort_keys=False)


def _text(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return json.dumps(text) if (" " in text or not text) else text


def configure(fmt: str, level: int = logging.INFO, stream: TextIO | None = None) -> None:
    """Send l3ha's logs to ``stream`` (stderr) as ``text`` or ``json``."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger("l3ha")
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    root.propagate = False
