"""Fixtures of the adapter tests: a canned Neutron on loopback and a clean client environment."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.cloud.neutron_fake import FakeNeutron

from l3ha.clock import ManualClock
from l3ha.emulator import Emulator, EmulatorConfig


@pytest.fixture
def fake() -> Iterator[FakeNeutron]:
    server = FakeNeutron().start()
    yield server
    server.stop()


@pytest.fixture
def noauth_env(fake: FakeNeutron, monkeypatch: pytest.MonkeyPatch) -> FakeNeutron:
    """``OS_AUTH_TYPE=none OS_ENDPOINT=<fake>``: the SDK talks to the fake without keystone."""
    monkeypatch.setenv("OS_AUTH_TYPE", "none")
    monkeypatch.setenv("OS_ENDPOINT", fake.url)
    return fake


@pytest.fixture
def emulator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    """A small emulated cloud on a ManualClock, named ``l3ha-emulator`` in OS_CLIENT_CONFIG_FILE."""
    config = EmulatorConfig(
        agents=4,
        routers=20,
        busy=2,
        ha_routers=2,
        azs=2,
        report_interval=0.2,
        agent_down_time=1.0,
        router_base_time=0.05,
    )
    with Emulator(config, clock=ManualClock()) as emu:
        path = emu.write_clouds_yaml(tmp_path / "clouds.yaml", name="l3ha-emulator")
        monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(path))
        yield emu
