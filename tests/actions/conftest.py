"""Fixtures of the action-command tests: a real-time emulated cloud and a private journal."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from l3ha.emulator import Emulator, EmulatorConfig

CLOUD = "l3ha-emulator"


def fast_config(**overrides: object) -> EmulatorConfig:
    """5 agents in 2 AZs, 40 routers (5 busy, 4 HA), agents that process in tens of ms."""
    settings: dict[str, object] = dict(
        agents=5,
        routers=40,
        busy=5,
        ha_routers=4,
        azs=2,
        report_interval=0.2,
        agent_down_time=1.0,
        router_base_time=0.02,
        router_port_time=0.005,
        seed=7,
    )
    settings.update(overrides)
    return EmulatorConfig(**settings)  # type: ignore[arg-type]


@pytest.fixture
def cloud_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    """A running emulator named by OS_CLOUD, and L3HA_STATE_DIR in tmp_path."""
    for key in ("OS_AUTH_TYPE", "OS_ENDPOINT", "OS_AUTH_URL", "OS_PASSWORD", "OS_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("L3HA_STATE_DIR", str(tmp_path / "state"))
    with Emulator(fast_config(), clock=None) as emu:
        path = emu.write_clouds_yaml(tmp_path / "clouds.yaml", name=CLOUD)
        monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(path))
        monkeypatch.setenv("OS_CLOUD", CLOUD)
        yield emu


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll ``condition`` (bounded) until it holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)
