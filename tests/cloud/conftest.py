"""Fixtures of the adapter tests: a canned Neutron on loopback and a clean client environment."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.cloud.neutron_fake import FakeNeutron

from l3ha.emulator import Emulator
from l3ha.emulator.testing import SMALL, Clocking, emulated_cloud


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
    """The small cloud (``SMALL``) on a ManualClock, named ``l3ha-emulator`` in
    OS_CLIENT_CONFIG_FILE."""
    with emulated_cloud(Clocking.MANUAL, workdir=tmp_path, **SMALL) as cloud:
        assert cloud.emulator is not None and cloud.clouds_yaml is not None
        monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(cloud.clouds_yaml))
        yield cloud.emulator
