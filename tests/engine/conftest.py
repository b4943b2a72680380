"""Fixtures of the engine's behaviour suite: one real-time emulated cloud with both kinds.

Four network nodes (``net-1`` .. ``net-4``), each with an L3 agent and a DHCP
agent, 24 routers and 24 networks spread over them; OS_CLOUD and
L3HA_STATE_DIR point at it for the command-line cases.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.engine.kinds import KINDS, Env, Kind

from l3ha.cloud.adapter import connect
from l3ha.cloud.dhcp import NeutronDhcp
from l3ha.emulator.testing import FAST, Clocking, emulated_cloud

CLOUD = "l3ha-emulator"


#: ``FAST`` agents (pre-calibration timing), both kinds on four nodes.
ENGINE_CLOUD: dict[str, object] = {
    **FAST,
    "agents": 4,
    "routers": 24,
    "dhcp_agents": 4,
    "networks": 24,
    "dhcp_network_time": 0.03,
    "seed": 5,
}


@pytest.fixture(params=KINDS, ids=lambda k: k.name)
def kind(request: pytest.FixtureRequest) -> Kind:
    """Every test of the suite runs once per kind of placement."""
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    state = tmp_path / "state"
    for key in [k for k in os.environ if k.startswith("OS_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("L3HA_STATE_DIR", str(state))
    with emulated_cloud(Clocking.REAL, workdir=tmp_path, name=CLOUD, **ENGINE_CLOUD) as made:
        assert made.emulator is not None
        for key, value in made.environ().items():
            monkeypatch.setenv(key, value)
        cloud = connect(CLOUD)
        yield Env(made.emulator, cloud, NeutronDhcp(cloud), state)


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
    """Poll ``condition`` (bounded) until it holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met in time: {what}")
        time.sleep(0.05)
