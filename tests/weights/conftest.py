"""Fixtures of the measured-weight tests: emulated clouds and a real Prometheus scraping them.

Starts the emulator in this process and Debian's ``prometheus`` as a child
process on loopback (skipped, with the reason, when it is not installed).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.weights.prometheus_server import (
    PrometheusServer,
    prometheus_binary,
    start_prometheus,
)

from l3ha.emulator import Emulator
from l3ha.emulator.testing import FAST, Clocking, emulated_cloud


@pytest.fixture
def make_cloud(tmp_path: Path) -> Iterator[Callable[..., Emulator]]:
    """Factory: a real-time emulator (``FAST`` plus the given settings) named by OS_CLOUD."""
    with contextlib.ExitStack() as started:

        def make(**settings: object) -> Emulator:
            cloud = started.enter_context(
                emulated_cloud(
                    Clocking.REAL, workdir=tmp_path, environ=os.environ, **{**FAST, **settings}
                )
            )
            assert cloud.emulator is not None
            return cloud.emulator

        yield make


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
