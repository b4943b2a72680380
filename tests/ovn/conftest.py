"""The emulated ML2/OVN cloud of the OVN tests: 3 gateway chassis, 6 routers, on a
ManualClock, named ``l3ha-emulator`` in a temporary clouds.yaml (``OS_CLOUD`` set)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from l3ha.emulator import Emulator
from l3ha.emulator.testing import FAST, Clocking, emulated_cloud

OVN: dict[str, Any] = {"ovn": True, "ovn_chassis": 3, "routers": 6, **FAST}


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    with emulated_cloud(Clocking.MANUAL, workdir=tmp_path, environ=os.environ, **OVN) as cloud:
        assert cloud.emulator is not None
        yield cloud.emulator
