"""``l3ha watch --dhcp`` scenarios: real daemon processes against the real-time emulator."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.dhcp.conftest import DhcpCloudEnv
from tests.watch.daemon_process import DEAD_AFTER, Scene, scene, wait_until

from l3ha.cloud.dhcp import NeutronDhcp

pytestmark = pytest.mark.slow

#: 5 network nodes with an L3 and a DHCP agent each, 30 networks.
DHCP_CLOUD: dict[str, object] = {
    "routers": 10,
    "busy": 2,
    "dhcp_agents": 5,
    "networks": 30,
    "dhcp_network_time": 0.03,
}


def _dhcp_bindings(made: Scene) -> dict[str, frozenset[str]]:
    snap = NeutronDhcp(made.cloud).read_dhcp_snapshot()
    hosts = {a.id: a.host for a in snap.agents}
    return {n.id: frozenset(hosts[a] for a in snap.agents_of_network(n.id)) for n in snap.networks}


@pytest.fixture
def dhcp_scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Scene]:
    with scene(tmp_path, monkeypatch, **DHCP_CLOUD) as made:
        yield made


def test_watch_moves_a_dead_hosts_networks_to_live_agents_with_active_ports(
    dhcp_scene: Scene,
) -> None:
    watch = dhcp_scene.start_watch("--dhcp")
    watch.wait_event("ready")
    before = _dhcp_bindings(dhcp_scene)
    victims = {n for n, hosts in before.items() if "net-1" in hosts}
    assert victims
    dhcp_scene.emu.faults.kill_agent("net-1")
    env = DhcpCloudEnv(dhcp_scene.emu, NeutronDhcp(dhcp_scene.cloud), dhcp_scene.workdir)

    def all_served() -> bool:
        snap = env.snapshot()
        return all(
            "net-1" not in env.hosts_of(n, snap) and env.served_with_active_port(n, snap)
            for n in victims
        )

    wait_until(all_served, 40, "net-1's networks served by live agents with ACTIVE ports")
    after = _dhcp_bindings(dhcp_scene)
    assert [n for n in before if n not in victims and after[n] != before[n]] == []
    wait_until(lambda: len(watch.events("dhcp_move")) >= len(victims), 20, "moves logged")
    assert watch.terminate() == 0
    moved = {e["network"] for e in watch.events("dhcp_move") if e["outcome"] == "moved"}
    assert moved == victims
    # every event names the host and the network beside the ids
    snap = env.snapshot()
    dead_id = snap.find_agent("net-1").id
    names = {n.id: n.name for n in snap.networks}
    for e in watch.events("dhcp_move"):
        assert e["network_name"] == names[str(e["network"])] != ""
        assert (e["source"], e["source_host"]) == (dead_id, "net-1")
        assert str(e["target_host"]).startswith("net-") and e["target"] != e["target_host"]
    (action,) = watch.events("dhcp_action")
    assert (action["agent"], action["agent_host"]) == (dead_id, "net-1")
    verdicts = [e for e in watch.events("dhcp_verdict") if e["agent"] == "net-1"]
    assert verdicts and {e["agent_id"] for e in verdicts} == {dead_id}


def test_a_broker_outage_makes_no_dhcp_move(dhcp_scene: Scene) -> None:
    watch = dhcp_scene.start_watch("--dhcp")
    watch.wait_event("ready")
    before = _dhcp_bindings(dhcp_scene)
    dhcp_scene.emu.faults.broker_outage(3 * DEAD_AFTER, DEAD_AFTER)
    watch.wait_event("dhcp_halt", reason="control_plane_suspect", timeout=4 * DEAD_AFTER)
    watch.wait_event("dhcp_resumed", timeout=8 * DEAD_AFTER)
    time.sleep(DEAD_AFTER)  # cycles after the gates cleared: still nothing to do
    assert _dhcp_bindings(dhcp_scene) == before
    assert watch.events("dhcp_move") == []
    assert watch.terminate() == 0


def test_neutron_auto_failover_moves_networks_in_the_same_outage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The comparison stays honest: the same outage makes Neutron's DHCP failover move."""
    with scene(tmp_path, monkeypatch, neutron_auto_failover=True, **DHCP_CLOUD) as neutron:
        before = _dhcp_bindings(neutron)
        neutron.emu.faults.broker_outage(3 * DEAD_AFTER, DEAD_AFTER)
        wait_until(
            lambda: _dhcp_bindings(neutron) != before, 6 * DEAD_AFTER, "Neutron moving networks"
        )
        counters = neutron.emu.state()["dhcp_auto_failover"]
        assert counters["removed"] > 0, counters


def test_a_dhcp_halt_is_in_the_status_file_and_l3ha_check_reports_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every DHCP node (apart from the L3 nodes) dies at once: the DHCP side halts, the
    router side does not, and ``l3ha check --state-dir`` says so like a router halt."""
    cloud = dict(DHCP_CLOUD, dhcp_agents=3, dhcp_host_prefix="dhcp")
    with scene(tmp_path, monkeypatch, **cloud) as made:
        watch = made.start_watch("--dhcp")
        watch.wait_event("ready")
        for host in ("dhcp-1", "dhcp-2", "dhcp-3"):
            made.emu.faults.kill_agent(host)
        watch.wait_event("dhcp_halt", reason="control_plane_suspect", timeout=4 * DEAD_AFTER)
        state = made.workdir / "state"

        def dhcp_halt_written() -> bool:
            status = json.loads((state / "watch-status.json").read_text(encoding="utf-8"))
            return bool(status["dhcp"]["halts"])

        wait_until(dhcp_halt_written, 10, "the DHCP halt in the status file")
        status = json.loads((state / "watch-status.json").read_text(encoding="utf-8"))
        assert status["halts"] == []  # the routers' side does not halt
        assert status["dhcp"]["verdicts"]["alive"] == 0
        check = subprocess.run(
            [sys.executable, "-c", "from l3ha.cli.main import run; run()", "check",
             "--state-dir", str(state)],
            env=made.env, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert check.returncode == 1, check.stdout + check.stderr  # WARNING
        assert "watch halted DHCP (control_plane_suspect)" in check.stdout
        assert watch.events("dhcp_move") == []
        assert watch.terminate() == 0
