"""Snapshot files: a faithful round trip, atomic writes, and one-line errors for bad files."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from l3ha.errors import BadInputError
from l3ha.model import Agent, AgentMode, Binding, HAState, Router, Snapshot
from l3ha.snapshotfile import VERSION, load_snapshot, save_snapshot, snapshot_to_dict


def _snapshot() -> Snapshot:
    agents = (
        Agent(
            id="a1",
            host="net-1",
            availability_zone="az1",
            heartbeat_timestamp="2026-01-01 00:00:00",
            started_at="2025-12-31 00:00:00",
        ),
        Agent(
            id="a2",
            host="net-2",
            availability_zone="az2",
            mode=AgentMode.DVR_SNAT,
            admin_state_up=False,
            alive=False,
            description="drained",
        ),
    )
    routers = (
        Router(id="r1", name="web", tags=("l3ha:busy",), availability_zone_hints=("az1",)),
        Router(id="r2", name="db", ha=True, project_id="p1"),
        Router(id="r3", distributed=True, admin_state_up=False, status="ERROR"),
    )
    bindings = (
        Binding("r1", "a1"),
        Binding("r2", "a1", HAState.ACTIVE),
        Binding("r2", "a2", HAState.STANDBY),
    )
    return Snapshot(agents, routers, bindings, observed_at="2026-01-01T00:00:05+00:00")


def test_round_trip_keeps_everything(tmp_path: Path) -> None:
    snap = _snapshot()
    path = tmp_path / "snap.json"
    save_snapshot(snap, path)
    loaded = load_snapshot(path)
    assert loaded.agents == snap.agents
    assert loaded.routers == snap.routers
    assert loaded.bindings == snap.bindings
    assert loaded.observed_at == snap.observed_at
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert (doc["format"], doc["version"]) == ("l3ha-snapshot", VERSION)


def test_save_replaces_atomically_and_leaves_no_temporary_files(tmp_path: Path) -> None:
    directory = tmp_path / "snaps"
    directory.mkdir()
    path = directory / "snap.json"
    path.write_text("old", encoding="utf-8")
    inode_before = path.stat().st_ino
    save_snapshot(_snapshot(), path)
    assert os.listdir(directory) == ["snap.json"]
    assert path.stat().st_ino != inode_before  # renamed into place, not rewritten


def _write(tmp_path: Path, doc: Any) -> Path:
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _valid() -> dict[str, Any]:
    return snapshot_to_dict(_snapshot())


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda d: d.update(version=2), "version 2 is not supported"),
        (lambda d: d.pop("format"), "not an l3ha snapshot"),
        (lambda d: d.pop("routers"), "document has no 'routers'"),
        (lambda d: d["agents"][0].pop("host"), "agents[0] has no 'host'"),
        (lambda d: d["agents"][1].update(mode="turbo"), "agents[1]: unknown value 'turbo'"),
        (lambda d: d["routers"][0].update(tags="l3ha:busy"), "'tags' must be a list"),
        (lambda d: d["routers"][0].update(ha="yes"), "'ha' must be true or false"),
        (lambda d: d["bindings"][1].update(ha_state="master"), "unknown value 'master'"),
        (lambda d: d["bindings"][0].update(agent_id="a9"), "unknown agent 'a9'"),
        (lambda d: d["bindings"][0].update(router_id="r9"), "unknown router 'r9'"),
        (lambda d: d["agents"].append(dict(d["agents"][0])), "duplicate"),
        (lambda d: d["bindings"].append(7), "bindings[3] is not an object"),
    ],
)
def test_malformed_documents_name_the_problem(tmp_path: Path, mutate: Any, reason: str) -> None:
    doc = _valid()
    mutate(doc)
    with pytest.raises(BadInputError) as info:
        load_snapshot(_write(tmp_path, doc))
    assert reason in str(info.value)
    assert str(tmp_path) in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_file_and_binary_garbage_are_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="No such file"):
        load_snapshot(tmp_path / "absent.json")
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(b"\xff\xfe\x00junk")
    with pytest.raises(BadInputError, match="cannot read snapshot"):
        load_snapshot(garbage)


def test_directory_is_not_a_snapshot(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="cannot read snapshot"):
        load_snapshot(tmp_path)
