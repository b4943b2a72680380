"""``l3ha check`` on the emulator's ML2/OVN mode: OK, a dead chassis that would fail its
routers back (cleared by evacuate), a router short of live chassis, a southbound outage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from l3ha.cli.main import main
from l3ha.cloud.adapter import connect
from l3ha.cloud.ovn import NeutronOvn
from l3ha.emulator import CLOUD_NAME as CLOUD
from l3ha.emulator import Emulator


def check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["check", "-f", "json", *args])
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return code, doc


def kinds(doc: dict[str, Any]) -> list[str]:
    return [p["kind"] for p in doc["problems"]]


def test_a_healthy_ovn_cloud_is_ok(emulator: Emulator, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = check(capsys)
    assert (code, doc["status"], doc["perfdata"]["chassis"]) == (0, "OK", 3)


def test_a_dead_top_chassis_warns_until_it_is_evacuated(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    ovn = NeutronOvn(connect(cloud=CLOUD))
    router = sorted(r.id for r in ovn.read_ovn_snapshot().routers)[0]
    ovn.remove(router, "gw-3")
    emulator.faults.kill_chassis("gw-1")
    for _ in range(4):
        emulator.advance(1.1)
        ovn.list_chassis()
    code, doc = check(capsys)
    assert code == 1
    assert "failback_pending" in kinds(doc)
    assert any(router in p["routers"] for p in doc["problems"] if p["kind"] == "few_chassis")
    assert main(["evacuate", "gw-1", "--state-dir", str(tmp_path)]) == 0
    capsys.readouterr()
    code, doc = check(capsys)
    assert kinds(doc) == ["imbalance"]  # gw-2 took 4 of the 6 primaries when gw-1 died
    code, doc = check(capsys, "--imbalance-threshold", "50")
    assert (code, doc["status"]) == (0, "OK"), doc


def test_every_chassis_dead_is_the_control_plane(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    emulator.faults.sb_outage(60.0)
    code, doc = check(capsys)
    assert code == 1
    assert kinds(doc) == ["control_plane"]


def test_an_l3_only_option_is_unknown_with_one_line(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["check", "--dhcp"])
    captured = capsys.readouterr()
    assert code == 3
    assert captured.err.count("\n") == 1 and "--dhcp is for L3 agents" in captured.err


def test_a_gateway_port_neutron_failed_to_bind_is_reported(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    ports = NeutronOvn(connect(cloud=CLOUD)).gateway_ports()
    assert len(ports) == 6 and not any(p.unbound for p in ports)
    assert {p.host for p in ports} == {"gw-1", "gw-2", "gw-3"}  # each on its primary's host
    router = sorted(p.router_id for p in ports)[2]
    emulator.faults.gateway_unbound(router)
    code, doc = check(capsys)
    assert (code, kinds(doc)) == (1, ["gateway_unbound"])
    (problem,) = doc["problems"]
    assert problem["routers"] == [router] and "failed to bind" in problem["detail"]
    assert doc["perfdata"]["unbound_gateway_ports"] == 1
