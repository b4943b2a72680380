"""Fixtures of the DHCP tests: a real-time emulated cloud with DHCP agents and networks."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from l3ha.cloud.adapter import connect
from l3ha.cloud.dhcp import NeutronDhcp
from l3ha.dhcp_model import DhcpSnapshot, usable
from l3ha.emulator import Emulator
from l3ha.emulator.testing import FAST, Clocking, emulated_cloud
from l3ha.executor.dhcp_steps import serving_port

CLOUD = "l3ha-emulator"


#: 5 network nodes (L3 + DHCP agent each) in 2 AZs, 30 networks set up in tens of ms.
DHCP_CLOUD: dict[str, object] = {
    **FAST,
    "agents": 5,
    "routers": 5,
    "azs": 2,
    "dhcp_agents": 5,
    "networks": 30,
    "dhcp_network_time": 0.03,
    "seed": 11,
}


@dataclass
class DhcpCloudEnv:
    """The emulator, a DHCP view of it through the adapter, and the state dir."""

    emu: Emulator
    dhcp: NeutronDhcp
    state_dir: Path

    def snapshot(self) -> DhcpSnapshot:
        return self.dhcp.read_dhcp_snapshot()

    def hosts_of(self, network_id: str, snap: DhcpSnapshot | None = None) -> set[str]:
        snap = snap or self.snapshot()
        return {snap.agents_by_id[a].host for a in snap.agents_of_network(network_id)}

    def networks_on(self, host: str, snap: DhcpSnapshot | None = None) -> set[str]:
        snap = snap or self.snapshot()
        agent = snap.find_agent(host)
        return set(snap.networks_of_agent(agent.id))

    def served_with_active_port(self, network_id: str, snap: DhcpSnapshot) -> bool:
        """Some live, enabled agent hosts the network and its DHCP port there is ACTIVE."""
        ports = [p for p in snap.ports if p.network_id == network_id]
        return any(
            serving_port(ports, network_id, snap.agents_by_id[a].host) is not None
            for a in snap.serving_agents(network_id)
        )


@pytest.fixture
def dhcp_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[DhcpCloudEnv]:
    """A running emulator named by OS_CLOUD, and L3HA_STATE_DIR in tmp_path."""
    state = tmp_path / "state"
    monkeypatch.setenv("L3HA_STATE_DIR", str(state))
    with emulated_cloud(Clocking.REAL, workdir=tmp_path, name=CLOUD, **DHCP_CLOUD) as cloud:
        assert cloud.emulator is not None
        for key, value in cloud.environ().items():
            monkeypatch.setenv(key, value)
        yield DhcpCloudEnv(cloud.emulator, NeutronDhcp(connect(CLOUD)), state)


def wait_for(condition: Callable[[], bool], timeout: float = 10.0, what: str = "") -> None:
    """Poll ``condition`` (bounded) until it holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met in time: {what}")
        time.sleep(0.05)


def dead(env: DhcpCloudEnv, host: str) -> bool:
    """Whether the server reports the DHCP agent on ``host`` dead."""
    return not usable(env.snapshot().find_agent(host))
