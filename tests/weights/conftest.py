"""Fixtures of the measured-weight tests: emulated clouds and a real Prometheus scraping them.

Starts the emulator in this process and Debian's ``prometheus`` as a child
process on loopback (skipped, with the reason, when it is not installed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.weights.prometheus_server import (
    PrometheusServer,
    prometheus_binary,
    start_prometheus,
)

from l3ha.emulator import Emulator, EmulatorConfig

CLOUD = "l3ha-emulator"

#: Agents that heartbeat every 0.2 s, dead after 1 s, process routers in tens of ms.
FAST = {
    "report_interval": 0.2,
    "agent_down_time": 1.0,
    "router_base_time": 0.02,
    "router_port_time": 0.005,
}


def use_cloud(emu: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Name ``emu`` as ``OS_CLOUD`` for the commands this test runs in-process."""
    path = emu.write_clouds_yaml(tmp_path / "clouds.yaml", name=CLOUD)
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(path))
    monkeypatch.setenv("OS_CLOUD", CLOUD)


@pytest.fixture
def make_cloud(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., Emulator]]:
    """Factory: a real-time emulator (``FAST`` plus the given settings) named by OS_CLOUD."""
    started: list[Emulator] = []

    def make(**settings: object) -> Emulator:
        config = EmulatorConfig(**{**FAST, **settings})  # type: ignore[arg-type]
        emu = Emulator(config).start()
        started.append(emu)
        use_cloud(emu, tmp_path, monkeypatch)
        return emu

    yield make
    for emu in started:
        emu.stop()


@pytest.fixture
def prometheus_for(tmp_path: Path) -> Iterator[Callable[[Emulator], PrometheusServer]]:
    """Factory: a real Prometheus scraping the given emulator every second."""
    binary = prometheus_binary()
    if binary is None:
        pytest.skip("Debian's prometheus is not installed (scripts/install-system-deps.sh)")
    started: list[PrometheusServer] = []

    def start(emu: Emulator) -> PrometheusServer:
        workdir = tmp_path / f"prometheus-{len(started)}"
        workdir.mkdir()
        server = start_prometheus(binary, workdir, f"127.0.0.1:{emu.port}")
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
