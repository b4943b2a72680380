"""Snapshots saved to and loaded from versioned JSON files. I/O: reads and writes one file.

``l3ha snapshot save FILE`` writes the cloud as observed (agents, routers with
their tags, bindings with ``ha_state``, the observation time); planning
commands take ``--snapshot FILE`` to plan offline from it. Files are written
atomically (temporary file in the same directory, then rename). Anything
unreadable, malformed or of another version is a one-line ``BadInputError``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from l3ha.errors import BadInputError
from l3ha.model import Agent, AgentMode, Binding, HAState, Router, Snapshot

FORMAT = "l3ha-snapshot"
VERSION = 1

T = TypeVar("T")


# --- writing ------------------------------------------------------------------


def model_to_dict(item: Agent | Router | Binding) -> dict[str, Any]:
    """The JSON form of one agent, router or binding: its fields in their order, tuples as
    lists, enums as their values."""
    return {f.name: _json_value(getattr(item, f.name)) for f in dataclasses.fields(item)}


def _json_value(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    return str(value) if isinstance(value, StrEnum) else value


def snapshot_to_dict(snapshot: Snapshot) -> dict[str, Any]:
    """The whole versioned document."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "observed_at": snapshot.observed_at,
        "agents": [model_to_dict(a) for a in snapshot.agents],
        "routers": [model_to_dict(r) for r in snapshot.routers],
        "bindings": [model_to_dict(b) for b in snapshot.bindings],
    }


def save_snapshot(snapshot: Snapshot, path: str | os.PathLike[str]) -> None:
    """Write ``snapshot`` to ``path`` atomically; an unwritable path is a ``BadInputError``."""
    target = Path(path)
    text = json.dumps(snapshot_to_dict(snapshot), indent=1) + "\n"
    directory = target.parent if str(target.parent) else Path(".")
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise BadInputError(f"cannot write snapshot {target}: {exc.strerror or exc}") from exc


# --- reading ------------------------------------------------------------------


class _Reader:
    """Typed field access that names the file and the bad entry in its error."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, what: str) -> BadInputError:
        return BadInputError(f"snapshot {self.path}: {what}")

    def get(self, data: Mapping[str, Any], key: str, kind: type[T], where: str, default: Any) -> T:
        value = data.get(key, default)
        if value is _REQUIRED:
            raise self.fail(f"{where} has no {key!r}")
        if not isinstance(value, kind):
            expected = _KIND_NAMES.get(kind, kind.__name__)
            raise self.fail(f"{where}: {key!r} must be {expected}, not {value!r}")
        return value

    def strings(self, data: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
        values = self.get(data, key, list, where, [])
        if not all(isinstance(v, str) for v in values):
            raise self.fail(f"{where}: {key!r} must be a list of strings")
        return tuple(values)

    def enum(self, build: Callable[[str], T], value: str, where: str) -> T:
        try:
            return build(value)
        except ValueError as exc:
            raise self.fail(f"{where}: unknown value {value!r}") from exc

    def items(self, doc: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
        values = self.get(doc, key, list, "document", _REQUIRED)
        for i, item in enumerate(values):
            if not isinstance(item, dict):
                raise self.fail(f"{key}[{i}] is not an object")
        return values


_REQUIRED = object()
_KIND_NAMES: dict[type, str] = {
    str: "a string",
    bool: "true or false",
    list: "a list",
    dict: "an object",
}


def _agent(r: _Reader, d: Mapping[str, Any], where: str) -> Agent:
    return Agent(
        id=r.get(d, "id", str, where, _REQUIRED),
        host=r.get(d, "host", str, where, _REQUIRED),
        availability_zone=r.get(d, "availability_zone", str, where, ""),
        mode=r.enum(AgentMode, r.get(d, "mode", str, where, "legacy"), where),
        admin_state_up=r.get(d, "admin_state_up", bool, where, True),
        alive=r.get(d, "alive", bool, where, True),
        heartbeat_timestamp=r.get(d, "heartbeat_timestamp", str, where, ""),
        started_at=r.get(d, "started_at", str, where, ""),
        description=r.get(d, "description", str, where, ""),
    )


def _router(r: _Reader, d: Mapping[str, Any], where: str) -> Router:
    return Router(
        id=r.get(d, "id", str, where, _REQUIRED),
        name=r.get(d, "name", str, where, ""),
        ha=r.get(d, "ha", bool, where, False),
        distributed=r.get(d, "distributed", bool, where, False),
        availability_zone_hints=r.strings(d, "availability_zone_hints", where),
        tags=r.strings(d, "tags", where),
        project_id=r.get(d, "project_id", str, where, ""),
        admin_state_up=r.get(d, "admin_state_up", bool, where, True),
        status=r.get(d, "status", str, where, "ACTIVE"),
        gateway_ips=r.strings(d, "gateway_ips", where),
    )


def _binding(r: _Reader, d: Mapping[str, Any], where: str) -> Binding:
    state = d.get("ha_state")
    if state is not None and not isinstance(state, str):
        raise r.fail(f"{where}: 'ha_state' must be a string or null")
    return Binding(
        router_id=r.get(d, "router_id", str, where, _REQUIRED),
        agent_id=r.get(d, "agent_id", str, where, _REQUIRED),
        ha_state=r.enum(HAState, state, where) if state is not None else None,
    )


def snapshot_from_dict(doc: object, path: Path) -> Snapshot:
    """Validate a decoded document and build the ``Snapshot`` (``BadInputError`` if wrong)."""
    r = _Reader(path)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise r.fail(f'not an l3ha snapshot (no "format": "{FORMAT}")')
    if doc.get("version") != VERSION:
        raise r.fail(f"version {doc.get('version')!r} is not supported (this l3ha reads {VERSION})")
    agents = tuple(_agent(r, d, f"agents[{i}]") for i, d in enumerate(r.items(doc, "agents")))
    routers = tuple(_router(r, d, f"routers[{i}]") for i, d in enumerate(r.items(doc, "routers")))
    bindings = tuple(
        _binding(r, d, f"bindings[{i}]") for i, d in enumerate(r.items(doc, "bindings"))
    )
    _check_references(r, agents, routers, bindings)
    observed_at = r.get(doc, "observed_at", str, "document", "")
    return Snapshot(agents=agents, routers=routers, bindings=bindings, observed_at=observed_at)


def _check_references(
    r: _Reader,
    agents: tuple[Agent, ...],
    routers: tuple[Router, ...],
    bindings: tuple[Binding, ...],
) -> None:
    agent_ids = {a.id for a in agents}
    router_ids = {x.id for x in routers}
    if len(agent_ids) != len(agents) or len(router_ids) != len(routers):
        raise r.fail("duplicate agent or router ids")
    for i, b in enumerate(bindings):
        if b.agent_id not in agent_ids:
            raise r.fail(f"bindings[{i}] names unknown agent {b.agent_id!r}")
        if b.router_id not in router_ids:
            raise r.fail(f"bindings[{i}] names unknown router {b.router_id!r}")


def load_snapshot(path: str | os.PathLike[str]) -> Snapshot:
    """Read a snapshot file written by ``save_snapshot``."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise BadInputError(f"cannot read snapshot {source}: {reason}") from exc
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInputError(
            f"snapshot {source}: not valid JSON (line {exc.lineno}: {exc.msg})"
        ) from exc
    return snapshot_from_dict(doc, source)
