"""The emulator's ML2/OVN mode: nb_cfg liveness, BFD failover, pre-emptive failback,
graceful moves, the southbound outage, and the data plane that shows each outage."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from l3ha.clock import ManualClock
from l3ha.emulator import Emulator
from l3ha.emulator.config import EmulatorConfig
from l3ha.emulator.faults import FaultError, Step, parse_fault
from l3ha.emulator.ovn_world import MoveKind

from .conftest import Http, make
from .test_cli import L3HA, run
from .test_dataplane import connects

OVN: dict[str, Any] = {
    "ovn": True,
    "ovn_chassis": 3,
    "routers": 6,
    "report_interval": 0.5,
    "agent_down_time": 2.0,
    "dataplane_listeners": 6,
}


def primary(emu: Emulator, router_id: str) -> str | None:
    assert emu.ovn is not None
    return emu.ovn.ovn.gateways[router_id].bound


def routers_on(emu: Emulator, chassis: str) -> list[str]:
    return [rid for rid in emu.world.routers if primary(emu, rid) == chassis]


def alive(emu: Emulator) -> dict[str, bool]:
    status, doc, _ = Http(emu).call("GET", "/v2.0/agents")
    assert status == 200
    return {agent["id"]: agent["alive"] for agent in doc["agents"]}


def test_only_gateway_agents_are_listed_and_primaries_are_spread(clock: ManualClock) -> None:
    with make(clock, **OVN) as emu:
        assert alive(emu) == {"gw-1": True, "gw-2": True, "gw-3": True}
        assert sorted(len(routers_on(emu, f"gw-{n}")) for n in (1, 2, 3)) == [2, 2, 2]
        assert all(d["reachable"] for d in emu.dataplane().values())


def test_agent_routes_are_the_gateway_agents_and_dhcp_shims_are_404(clock: ManualClock) -> None:
    with make(clock, **OVN) as emu:
        http = Http(emu)
        status, doc, _ = http.call("GET", "/v2.0/agents/gw-1")
        assert status == 200 and doc["agent"]["agent_type"] == "OVN Controller Gateway agent"
        router_id = routers_on(emu, "gw-1")[0]
        status, doc, _ = http.call("GET", f"/v2.0/routers/{router_id}/l3-agents")
        assert status == 200 and "ha_chassis_priority" in doc["agents"][0]
        for method, path in [("POST", "/v2.0/agents"), ("DELETE", "/v2.0/agents/gw-1"),
                             ("GET", "/v2.0/agents/gw-1/dhcp-networks")]:
            status, doc, _ = http.call(method, path)
            assert status == 404, (method, path)
            assert doc["NeutronError"]["message"] == "The resource could not be found."


def test_a_crashed_chassis_reads_dead_after_agent_down_time_not_before(clock: ManualClock) -> None:
    with make(clock, **OVN) as emu:
        emu.faults.kill_chassis("gw-1")
        emu.advance(1.0)
        assert alive(emu)["gw-1"] is True  # its last answer is younger than agent_down_time
        emu.advance(1.5)
        assert alive(emu) == {"gw-1": False, "gw-2": True, "gw-3": True}
        emu.faults.revive_chassis("gw-1")
        emu.advance(0.6)
        assert alive(emu)["gw-1"] is True


def test_crash_fails_over_after_bfd_detection_and_claim(clock: ManualClock) -> None:
    with make(clock, **OVN) as emu:
        victims = routers_on(emu, "gw-1")
        emu.faults.kill_chassis("gw-1")
        address = emu.dataplane()[victims[0]]["address"]
        assert not connects(address)
        emu.advance(3.4)
        assert not any(emu.dataplane()[rid]["reachable"] for rid in victims)
        emu.advance(0.2)
        assert all(emu.dataplane()[rid]["reachable"] for rid in victims)
        assert connects(address)
        assert emu.ovn is not None
        for rid in victims:
            (outage,) = emu.ovn.ovn.gateways[rid].outages
            assert outage.kind == MoveKind.FAILOVER
            assert outage.end - outage.start == pytest.approx(3.5, abs=0.06)
            assert primary(emu, rid) != "gw-1"


def test_a_returning_chassis_pre_empts_its_routers_back_with_a_second_outage(
    clock: ManualClock,
) -> None:
    with make(clock, **OVN) as emu:
        victims = routers_on(emu, "gw-1")
        emu.faults.kill_chassis("gw-1")
        emu.advance(10)
        emu.faults.revive_chassis("gw-1")
        emu.advance(0.1)
        assert not any(emu.dataplane()[rid]["reachable"] for rid in victims)
        emu.advance(2)
        assert emu.ovn is not None
        for rid in victims:
            assert primary(emu, rid) == "gw-1"
            first, second = emu.ovn.ovn.gateways[rid].outages
            assert first.kind == MoveKind.FAILOVER
            assert second.kind == MoveKind.FAILBACK
            assert second.end - second.start == pytest.approx(1.4, abs=0.06)


def test_a_priority_change_moves_the_gateway_gracefully(clock: ManualClock) -> None:
    with make(clock, **OVN) as emu:
        router = routers_on(emu, "gw-1")[0]
        api = Http(emu)
        status, _, _ = api.call(
            "PUT", f"/v2.0/agents/gw-2/l3-routers/{router}", {"ha_chassis_priority": 100}
        )
        assert status == 200
        assert primary(emu, router) == "gw-2"
        assert emu.dataplane()[router]["reachable"] is False
        emu.advance(1.1)
        assert emu.dataplane()[router]["reachable"] is True
        assert emu.ovn is not None
        (outage,) = emu.ovn.ovn.gateways[router].outages
        assert outage.kind == MoveKind.GRACEFUL
        assert outage.end - outage.start == pytest.approx(1.0, abs=0.06)


def test_southbound_outage_makes_every_agent_dead_while_gateways_forward(
    clock: ManualClock,
) -> None:
    with make(clock, **OVN) as emu:
        emu.faults.sb_outage(30)
        emu.advance(1)
        assert set(alive(emu).values()) == {False}
        emu.advance(28)
        assert set(alive(emu).values()) == {False}
        assert all(d["reachable"] for d in emu.dataplane().values())
        assert emu.state()["ovn"]["outages"] == {}


def test_after_a_southbound_outage_neutron_demotes_one_chassis_everywhere(
    clock: ManualClock,
) -> None:
    with make(clock, **OVN) as emu:
        assert emu.ovn is not None
        before = {rid: primary(emu, rid) for rid in emu.world.routers}
        emu.faults.sb_outage(30)
        emu.advance(32)
        assert set(alive(emu).values()) == {True}
        groups = [g.priorities for g in emu.ovn.ovn.gateways.values()]
        demoted = {name for name, priority in groups[0].items() if priority == 0}
        assert len(demoted) == 1
        (victim,) = demoted
        assert all(group[victim] == 0 for group in groups)
        moved = [rid for rid, chassis in before.items() if chassis == victim]
        assert len(moved) == 2 and all(primary(emu, rid) != victim for rid in moved)
        assert emu.state()["ovn"]["outages"] == {"graceful": {"count": 2, "seconds": 2.0}}


def test_a_neutron_that_does_not_demote_leaves_every_group_alone(clock: ManualClock) -> None:
    with make(clock, **OVN, ovn_sb_reconnect_demotes=False) as emu:
        emu.faults.sb_outage(30)
        emu.advance(32)
        assert emu.state()["ovn"]["outages"] == {}


def test_state_counts_primaries_hosting_and_outages_by_kind(clock: ManualClock) -> None:
    with make(clock, **OVN) as emu:
        emu.faults.kill_chassis("gw-1")
        emu.advance(10)
        ovn = emu.state()["ovn"]
        rows = {c["name"]: c for c in ovn["chassis"]}
        assert rows["gw-1"]["running"] is False and rows["gw-1"]["primaries"] == 2
        assert rows["gw-1"]["hosting"] == 0
        assert rows["gw-2"]["hosting"] + rows["gw-3"]["hosting"] == 6
        assert ovn["outages"] == {"failover": {"count": 2, "seconds": 7.0}}
        assert ovn["dark"] == 0 and ovn["sb_outage"] is False


def test_chassis_faults_need_ovn_mode_and_a_known_chassis(clock: ManualClock) -> None:
    with make(clock, agents=2, routers=2) as emu, pytest.raises(FaultError, match="OVN mode"):
        emu.faults.kill_chassis("gw-1")
    with make(clock, **OVN) as emu, pytest.raises(FaultError, match="unknown chassis"):
        emu.faults.kill_chassis("gw-9")


def test_fault_endpoint_takes_chassis_faults(clock: ManualClock) -> None:
    with make(clock, **OVN) as emu:
        status, _, _ = Http(emu).call(
            "POST", "/_emulator/faults", {"fault": "kill-chassis", "chassis": "gw-2"}
        )
        assert status == 200
        assert emu.ovn is not None and not emu.ovn.ovn.chassis["gw-2"].running


def test_serve_ovn_lists_gateway_agents_and_takes_chassis_faults(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path)}
    argv = [*L3HA, "emulator", "serve", "--port", "0", "--ovn", "--ovn-chassis", "2"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        with urllib.request.urlopen(f"{url}v2.0/agents", timeout=10) as response:
            agents = json.loads(response.read())["agents"]
        assert {(a["id"], a["agent_type"]) for a in agents} == {
            ("gw-1", "OVN Controller Gateway agent"),
            ("gw-2", "OVN Controller Gateway agent"),
        }
        done = run([*L3HA, "emulator", "fault", "kill-chassis", "gw-1", "--url", url], env)
        assert done.returncode == 0, done.stderr
        done = run([*L3HA, "emulator", "fault", "kill-chassis", "gw-7", "--url", url], env)
        assert (done.returncode, done.stderr.strip()) == (
            2,
            "l3ha: error: unknown chassis 'gw-7'",
        )
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_ovn_mode_refuses_agent_only_settings(clock: ManualClock) -> None:
    for setting in ("ha_routers", "dvr_routers", "dhcp_agents"):
        with pytest.raises(ValueError, match=f"^{setting} needs L3 or DHCP agents"):
            EmulatorConfig(**{**OVN, setting: 1}).validate()


def test_a_scenario_naming_an_unknown_chassis_is_refused_up_front(clock: ManualClock) -> None:
    with make(clock, **OVN) as emu, pytest.raises(FaultError, match="unknown chassis 'gw-9'"):
        emu.schedule_scenario(
            [Step(1.0, parse_fault({"fault": "kill-chassis", "chassis": "gw-9"}))]
        )
