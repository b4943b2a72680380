"""Fixtures of the action-command tests: a real-time emulated cloud and a private journal."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from l3ha.emulator import Emulator
from l3ha.emulator.testing import FAST, Clocking, emulated_cloud

#: 5 agents in 2 AZs, 40 routers (5 busy, 4 HA), agents that process in tens of ms.
ACTIONS_CLOUD = {
    **FAST,
    "agents": 5,
    "routers": 40,
    "busy": 5,
    "ha_routers": 4,
    "azs": 2,
    "seed": 7,
}


@pytest.fixture
def cloud_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    """A running emulator named by OS_CLOUD, and L3HA_STATE_DIR in tmp_path."""
    for key in ("OS_AUTH_TYPE", "OS_ENDPOINT", "OS_AUTH_URL", "OS_PASSWORD", "OS_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("L3HA_STATE_DIR", str(tmp_path / "state"))
    with emulated_cloud(
        Clocking.REAL, workdir=tmp_path, environ=os.environ, **ACTIONS_CLOUD
    ) as cloud:
        assert cloud.emulator is not None
        yield cloud.emulator


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll ``condition`` (bounded) until it holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)
