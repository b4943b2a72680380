"""Fixtures of the command tests: an emulated cloud named in a temporary clouds.yaml."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from l3ha.clock import ManualClock
from l3ha.emulator import Emulator, EmulatorConfig

CLOUD = "l3ha-emulator"


def small_config(**overrides: object) -> EmulatorConfig:
    """4 agents in 2 AZs, 20 routers of which 2 busy and 2 HA."""
    settings: dict[str, object] = dict(
        agents=4,
        routers=20,
        busy=2,
        ha_routers=2,
        azs=2,
        report_interval=0.2,
        agent_down_time=1.0,
        router_base_time=0.05,
    )
    settings.update(overrides)
    return EmulatorConfig(**settings)  # type: ignore[arg-type]


@pytest.fixture
def emulator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    """The small cloud on a ManualClock, as ``OS_CLOUD=l3ha-emulator``."""
    with Emulator(small_config(), clock=ManualClock()) as emu:
        path = emu.write_clouds_yaml(tmp_path / "clouds.yaml", name=CLOUD)
        monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(path))
        monkeypatch.setenv("OS_CLOUD", CLOUD)
        yield emu
