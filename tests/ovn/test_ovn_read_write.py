"""Gateway chassis and their priorities read and written through ``cloud.ovn`` against the
emulator's ML2/OVN mode, and ``agent list`` / ``router list`` on it (in-process)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from l3ha.cli.main import main
from l3ha.cloud.adapter import connect
from l3ha.cloud.ovn import NeutronOvn
from l3ha.emulator import CLOUD_NAME as CLOUD
from l3ha.emulator import Emulator
from l3ha.errors import ConflictError
from l3ha.ovn_model import Backend


def ovn_cloud() -> NeutronOvn:
    return NeutronOvn(connect(cloud=CLOUD))


def priorities(emu: Emulator, router_id: str) -> dict[str, int]:
    assert emu.ovn is not None
    return dict(emu.ovn.ovn.gateways[router_id].priorities)


def test_backend_is_detected_from_the_agent_types(emulator: Emulator) -> None:
    ovn = ovn_cloud()
    assert ovn.backend() is Backend.OVN
    assert ovn.backend(Backend.L3_AGENT) is Backend.L3_AGENT


def test_snapshot_has_every_group_sorted_and_the_primary_is_the_top_live_chassis(
    emulator: Emulator,
) -> None:
    world = ovn_cloud().read_ovn_snapshot()
    assert sorted(c.id for c in world.chassis) == ["gw-1", "gw-2", "gw-3"]
    assert len(world.routers) == 6
    for router in world.routers:
        group = world.group(router.id)
        assert {b.chassis_id: b.priority for b in group} == priorities(emulator, router.id)
        assert [b.priority for b in group] == sorted((b.priority for b in group), reverse=True)
        assert world.primary(router.id) == group[0].chassis_id
    assert sum(len(world.primaries_of(c)) for c in ("gw-1", "gw-2", "gw-3")) == 6


def kill(emulator: Emulator, ovn: NeutronOvn, name: str) -> None:
    """Crash a chassis; two agent listings a ping interval apart let Neutron see it dead."""
    emulator.faults.kill_chassis(name)
    for _ in range(2):
        emulator.advance(1.1)
        ovn.list_chassis()


def test_a_dead_chassis_is_nobodys_primary(emulator: Emulator) -> None:
    ovn = ovn_cloud()
    kill(emulator, ovn, "gw-1")
    world = ovn.read_ovn_snapshot()
    assert not world.chassis_by_id["gw-1"].alive
    assert world.primaries_of("gw-1") == ()
    assert all("gw-1" not in world.live_chassis(r.id) for r in world.routers)


def test_writes_are_read_back(emulator: Emulator) -> None:
    ovn = ovn_cloud()
    world = ovn.read_ovn_snapshot()
    router = world.routers[0].id
    lowest = world.group(router)[-1]
    ovn.remove(router, lowest.chassis_id)
    assert lowest.chassis_id not in priorities(emulator, router)
    ovn.add(router, lowest.chassis_id, 0)
    assert priorities(emulator, router)[lowest.chassis_id] == 0
    top = world.group(router)[0]
    ovn.set_priority(router, lowest.chassis_id, top.priority + 1)
    assert ovn.read_ovn_snapshot().primary(router) == lowest.chassis_id


def test_a_priority_already_used_is_refused(emulator: Emulator) -> None:
    ovn = ovn_cloud()
    world = ovn.read_ovn_snapshot()
    router = world.routers[0].id
    first, second = world.group(router)[:2]
    with pytest.raises(ConflictError):
        ovn.set_priority(router, second.chassis_id, first.priority)
    assert priorities(emulator, router)[second.chassis_id] == second.priority


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, object]]:
    code = main([*argv, "-f", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows: list[dict[str, object]] = json.loads(out)
    return rows


@pytest.mark.parametrize("backend", ["auto", "ovn"])
def test_agent_list_shows_gateway_chassis_with_primaries(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], backend: str
) -> None:
    rows = _json(capsys, "agent", "list", "--backend", backend)
    assert [r["id"] for r in rows] == ["gw-1", "gw-2", "gw-3"]
    assert all(r["alive"] and r["routers"] == 6 for r in rows)
    assert sum(int(str(r["primaries"])) for r in rows) == 6


def test_router_list_shows_chassis_in_priority_order(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _json(capsys, "router", "list", "-c", "id", "-c", "primary", "-c", "chassis_ids")
    assert len(rows) == 6
    for row in rows:
        ranked = sorted(priorities(emulator, str(row["id"])).items(), key=lambda kv: -kv[1])
        assert row["chassis_ids"] == [name for name, _ in ranked]
        assert row["primary"] == emulator.ovn.ovn.chassis[ranked[0][0]].host  # type: ignore[union-attr]


def test_router_list_on_one_chassis_and_unknown_chassis(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    assert len(_json(capsys, "router", "list", "--agent", "gw-2")) == 6
    code = main(["router", "list", "--agent", "nosuch"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "no gateway chassis" in err


def test_an_l3_only_option_on_ovn_is_one_line_exit_2(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    snapshot = tmp_path / "s.json"
    snapshot.write_text("{}")
    code = main(["agent", "list", "--backend", "ovn", "--snapshot", str(snapshot)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "is for L3 agents" in err
