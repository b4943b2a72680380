"""Fixtures of the engine's behaviour suite: one real-time emulated cloud per kind.

Routers and DHCP networks: four network nodes (``net-1`` .. ``net-4``), each with an
L3 agent and a DHCP agent, 24 routers and 24 networks spread over them; gateways: an
ML2/OVN cloud of four gateway chassis (``gw-1`` .. ``gw-4``) and 12 routers
(``kinds.py``). OS_CLOUD and L3HA_STATE_DIR point at it for the command-line cases.
``slow_neutron``: the same, its server slow to read an agent dead.
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


def _env(
    kind: Kind, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **settings: object
) -> Iterator[Env]:
    state = tmp_path / "state"
    for key in [k for k in os.environ if k.startswith("OS_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("L3HA_STATE_DIR", str(state))
    cloud_settings = {**kind.settings, **settings}
    with emulated_cloud(Clocking.REAL, workdir=tmp_path, name=CLOUD, **cloud_settings) as made:
        assert made.emulator is not None
        for key, value in made.environ().items():
            monkeypatch.setenv(key, value)
        cloud = connect(CLOUD)
        yield Env(made.emulator, cloud, NeutronDhcp(cloud), state, NeutronOvn(cloud))


@pytest.fixture
def env(kind: Kind, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    yield from _env(kind, tmp_path, monkeypatch)


@pytest.fixture
def slow_neutron(kind: Kind, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    """The same cloud, its server's agent_down_time 20 s: a killed agent reads alive for
    that long (as when l3ha judges before Neutron does; an OVN chassis' heartbeat moves
    every 10 s then, Neutron pinging every agent_down_time / 2)."""
    yield from _env(kind, tmp_path, monkeypatch, agent_down_time=20.0)


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
    """Poll ``condition`` (bounded) until it holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met in time: {what}")
        time.sleep(0.05)
