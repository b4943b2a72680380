"""Fixtures of the engine's behaviour suite: one real-time emulated cloud per kind.

Routers and DHCP networks: four network nodes (``net-1`` .. ``net-4``), each with an
L3 agent and a DHCP agent, 24 routers and 24 networks spread over them; gateways: an
ML2/OVN cloud of four gateway chassis (``gw-1`` .. ``gw-4``) and 12 routers
(``kinds.py``). OS_CLOUD and L3HA_STATE_DIR point at it for the command-line cases.
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
from l3ha.cloud.ovn import NeutronOvn
from l3ha.emulator.testing import Clocking, emulated_cloud

CLOUD = "l3ha-emulator"


@pytest.fixture(params=KINDS, ids=lambda k: k.name)
def kind(request: pytest.FixtureRequest) -> Kind:
    """Every test of the suite runs once per kind of placement."""
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def env(kind: Kind, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    state = tmp_path / "state"
    for key in [k for k in os.environ if k.startswith("OS_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("L3HA_STATE_DIR", str(state))
    with emulated_cloud(Clocking.REAL, workdir=tmp_path, name=CLOUD, **kind.settings) as made:
        assert made.emulator is not None
        for key, value in made.environ().items():
            monkeypatch.setenv(key, value)
        cloud = connect(CLOUD)
        yield Env(made.emulator, cloud, NeutronDhcp(cloud), state, NeutronOvn(cloud))


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
    """Poll ``condition`` (bounded) until it holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met in time: {what}")
        time.sleep(0.05)
