"""Fixtures for the emulator tests: emulators on a ManualClock (``l3ha.emulator.testing``)
with the agents' pre-calibration timing the tests were written for, and a raw HTTP helper."""

from __future__ import annotations

import contextlib
import http.client
import json
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

from l3ha.clock import ManualClock
from l3ha.emulator import Emulator
from l3ha.emulator.testing import PRE_CALIBRATION, Clocking, emulated_cloud


class Http:
    """Raw HTTP calls against one emulator (no client library in between)."""

    def __init__(self, emu: Emulator) -> None:
        self.emu = emu

    def call(self, method: str, path: str, body: Any = None,
             headers: dict[str, str] | None = None) -> tuple[int, Any, dict[str, str]]:
        conn = http.client.HTTPConnection("127.0.0.1", self.emu.port, timeout=10)
        try:
            data = None if body is None else json.dumps(body)
            conn.request(method, path, body=data, headers=headers or {})
            resp = conn.getresponse()
            raw = resp.read()
            doc = json.loads(raw) if raw else None
            return resp.status, doc, {k.lower(): v for k, v in resp.getheaders()}
        finally:
            conn.close()

    def get(self, path: str, **params: Any) -> tuple[int, Any]:
        if params:
            path += "?" + urllib.parse.urlencode(params, doseq=True)
        status, doc, _ = self.call("GET", path)
        return status, doc

    def agent_id(self, host: str) -> str:
        return self.emu.agent_ids_by_host()[host]


@contextlib.contextmanager
def make(clock: ManualClock | None = None, **settings: Any) -> Iterator[Emulator]:
    """A started emulator in this process, on ``clock`` (None: the real clock), with the
    agents' ``PRE_CALIBRATION`` timing unless ``settings`` say otherwise."""
    with emulated_cloud(clock or Clocking.REAL, **{**PRE_CALIBRATION, **settings}) as cloud:
        assert cloud.emulator is not None
        yield cloud.emulator


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def small(clock: ManualClock) -> Iterator[Emulator]:
    """4 legacy agents in 2 AZs, 8 routers (2 HA, 1 busy), on a ManualClock."""
    with make(clock, agents=4, routers=8, ha_routers=2, busy=1, azs=2, dhcp_agents=1) as emu:
        yield emu


@pytest.fixture
def api(small: Emulator) -> Http:
    return Http(small)
