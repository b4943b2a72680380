"""``l3ha rolling`` on nodes that run a DHCP agent next to the L3 agent (emulator, real time).

The maintenance command stops and starts both agent processes of the host
(``stop-agent HOST all``), as an upgrade of every neutron package on a
network node does. A sampler watches, all through the run, that every
network is set up on a live, enabled DHCP agent.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from l3ha.cloud.dhcp import NeutronDhcp
from l3ha.emulator import Emulator

from .rolling_process import Rollout, rollout, wait_until

HOSTS = ("net-1", "net-2", "net-3")
DHCP = {"dhcp_agents": 3, "networks": 12, "dhcp_network_time": 0.1}
UPGRADE = 'l3ha emulator fault stop-agent "$HOST" all\necho "upgrading $HOST"\nsleep 2\n' \
    'l3ha emulator fault start-agent "$HOST" all'  # fmt: skip


def unserved(emu: Emulator) -> list[str]:
    """Networks no live, enabled DHCP agent has set up, as the emulator sees them now."""
    tables, sim = emu.world.dhcp, emu.sim
    with emu.world.lock:
        return [
            n.id
            for n in tables.tenant_networks.values()
            if not any(
                b.processed and b.agent.admin_state_up and sim.is_alive(b.agent)
                for b in tables.bindings_of(n.id).values()
            )
        ]


@contextmanager
def sampling(emu: Emulator) -> Iterator[list[list[str]]]:
    """Every 20 ms, the networks without a live DHCP agent (only the non-empty samples)."""
    seen: list[list[str]] = []
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(0.02):
            missing = unserved(emu)
            if missing:
                seen.append(missing)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join(timeout=5)


def dhcp_agents(r: Rollout) -> dict[str, object]:
    return {a.host: a for a in NeutronDhcp(r.cloud).list_dhcp_agents()}


def assert_restored(r: Rollout) -> None:
    snapshot = NeutronDhcp(r.cloud).read_dhcp_snapshot()
    for agent in snapshot.agents:
        assert agent.admin_state_up and agent.description == "", agent
        assert snapshot.networks_of_agent(agent.id), f"{agent.host} serves no network"
    assert all(snapshot.serving_agents(n.id) for n in snapshot.networks if n.needs_dhcp)


def test_a_hosts_dhcp_agent_is_drained_and_restored_with_its_l3_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with rollout(tmp_path, monkeypatch, **DHCP) as r:
        wait_until(lambda: not unserved(r.emu), 20, "every network set up")
        code, doc, err = r.run("--run", r.script("upgrade.sh", UPGRADE), "--dry-run")
        assert code == 0, err
        planned = [(s["host"], s["step"]) for s in doc["steps"]]
        assert planned[:2] == [("net-1", "drain l3"), ("net-1", "drain dhcp")]
        assert ("net-3", "restore dhcp") in planned and len(planned) == 27
        assert sum(h["networks_out"] for h in doc["hosts"]) == 12  # what each would move
        before = {h: a.started_at for h, a in dhcp_agents(r).items()}  # type: ignore[attr-defined]
        with sampling(r.emu) as gaps:
            code, doc, err = r.run("--run", r.script("upgrade.sh", UPGRADE), "--rebalance-after")
        assert code == 0, err
        assert gaps == [], gaps[:3]  # never a network without a live DHCP agent
        assert [h["status"] for h in doc["hosts"]] == ["done", "done", "done"]
        for host in doc["hosts"]:
            assert host["networks_out"] > 0
            assert host["networks_back"] == host["networks_out"], host
        for host, agent in dhcp_agents(r).items():
            assert agent.started_at != before[host]  # type: ignore[attr-defined]
        assert_restored(r)
        steps = {(s.key.host, s.key.label): s for s in r.steps()}
        assert {s.status.value for s in steps.values()} == {"done"}
        assert steps[("net-2", "stable dhcp")].detail["restarted"] is True


def test_hosts_without_a_dhcp_agent_take_no_dhcp_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with rollout(tmp_path, monkeypatch, dhcp_agents=1, networks=2, dhcp_network_time=0.1) as r:
        code, doc, err = r.run("--dry-run", "--no-run")
        assert code == 0, err
        dhcp_steps = {s["host"] for s in doc["steps"] if s["step"].endswith("dhcp")}
        assert dhcp_steps == {"net-1"}


def test_kill_9_in_a_dhcp_drain_then_resume_finishes_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with rollout(tmp_path, monkeypatch, **DHCP) as r:
        wait_until(lambda: not unserved(r.emu), 20, "every network set up")
        command = r.script("upgrade.sh", UPGRADE)
        with sampling(r.emu) as gaps:
            child = r.start("--run", command, "--rate", "4", "--concurrency", "1")

            def draining_dhcp_of_net2() -> bool:
                assert child.poll() is None, child.communicate()
                return any(s.key.host == "net-2" and s.key.label == "drain dhcp"
                           and s.status.value == "running" for s in r.steps())  # fmt: skip

            wait_until(draining_dhcp_of_net2, 120, "net-2's DHCP drain")
            child.send_signal(signal.SIGKILL)
            child.communicate(timeout=10)
            code, doc, err = r.run("--run", command, "--resume")
        assert code == 0, err
        assert gaps == [], gaps[:3]
        assert [h["status"] for h in doc["hosts"]] == ["done", "done", "done"]
        attempts = {(s.key.host, s.key.label): s.attempts for s in r.steps()}
        assert attempts[("net-2", "drain dhcp")] == 2 and attempts[("net-2", "drain l3")] == 1
        assert_restored(r)
