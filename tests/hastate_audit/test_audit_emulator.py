"""``l3ha ha audit`` and ``l3ha ha repair`` against the emulator on a manual clock: split
brain, no active, all unknown and missing replicas are detected; repair restores two live
replicas without touching the active one."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from l3ha.cli.main import main
from l3ha.cloud.adapter import connect
from l3ha.emulator import Emulator
from l3ha.emulator.testing import SMALL, Clocking, emulated_cloud
from l3ha.model import HAState, Snapshot

CLOUD = "l3ha-emulator"


@pytest.fixture
def emu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    settings = {**SMALL, "agents": 6, "routers": 6, "ha_routers": 3, "busy": 0, "seed": 3,
                "ha_takeover_time": 5.0}  # fmt: skip
    monkeypatch.setenv("L3HA_STATE_DIR", str(tmp_path / "state"))
    with emulated_cloud(Clocking.MANUAL, workdir=tmp_path, environ=os.environ, **settings) as cloud:
        emulator = cloud.emulator
        assert emulator is not None
        emulator.advance(10.0)  # every HA router has elected its active replica
        yield emulator


def _snapshot() -> Snapshot:
    return connect(CLOUD).read_snapshot(with_ha_state=True)


def _audit(capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, set[str]]]:
    capsys.readouterr()
    code = main(["ha", "audit", "-f", "json"])
    found: dict[str, set[str]] = {}
    for row in json.loads(capsys.readouterr().out):
        found.setdefault(row["router"], set()).add(row["finding"])
    return code, found


def _ha_routers(snap: Snapshot) -> list[str]:
    return sorted(r.id for r in snap.routers if r.ha)


def _active_host(snap: Snapshot, router_id: str) -> str:
    (active,) = [b for b in snap.bindings_of_router(router_id) if b.ha_state == HAState.ACTIVE]
    return snap.agents_by_id[active.agent_id].host


def test_healthy_ha_routers_audit_clean(emu: Emulator, capsys: pytest.CaptureFixture[str]) -> None:
    code, found = _audit(capsys)
    assert (code, found) == (0, {})


def test_split_brain_is_critical(emu: Emulator, capsys: pytest.CaptureFixture[str]) -> None:
    router = _ha_routers(_snapshot())[0]
    assert emu.faults.split_brain(router) == 2
    code, found = _audit(capsys)
    assert code == 2
    assert found == {router: {"split_brain"}}


def test_dead_active_gives_no_active_then_takeover_then_repair(
    emu: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = _snapshot()
    router = _ha_routers(snap)[0]
    dead_host = _active_host(snap, router)
    emu.faults.kill_agent(dead_host)
    emu.advance(2.0)  # the agent is dead; VRRP has not taken over yet
    code, found = _audit(capsys)
    assert code == 2
    assert {"no_active", "replica_on_dead_agent", "too_few_replicas"} <= found[router]

    emu.advance(6.0)  # the surviving replica takes over
    code, found = _audit(capsys)
    assert code == 1
    assert found[router] == {"replica_on_dead_agent", "too_few_replicas"}
    survivor = _active_host(_snapshot(), router)
    assert survivor != dead_host

    assert main(["ha", "repair", "--no-wait"]) == 0
    emu.advance(10.0)
    after = _snapshot()
    live = [b for b in after.bindings_of_router(router) if after.agents_by_id[b.agent_id].alive]
    assert len(live) == 2
    assert dead_host not in {
        after.agents_by_id[b.agent_id].host for b in after.bindings_of_router(router)
    }
    assert _active_host(after, router) == survivor  # the active replica was never moved
    code, found = _audit(capsys)
    assert router not in found


def test_all_replicas_dead_is_unknown(emu: Emulator, capsys: pytest.CaptureFixture[str]) -> None:
    snap = _snapshot()
    router = _ha_routers(snap)[1]
    for binding in snap.bindings_of_router(router):
        emu.faults.kill_agent(snap.agents_by_id[binding.agent_id].host)
    emu.advance(2.0)
    code, found = _audit(capsys)
    assert code == 2
    assert "unknown" in found[router]
