"""Fixtures of the command tests: an emulated cloud named in a temporary clouds.yaml."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from l3ha.emulator import Emulator
from l3ha.emulator.testing import SMALL, Clocking, emulated_cloud


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    """The small cloud (``SMALL``) on a ManualClock, as ``OS_CLOUD=l3ha-emulator``."""
    with emulated_cloud(Clocking.MANUAL, workdir=tmp_path, environ=os.environ, **SMALL) as cloud:
        assert cloud.emulator is not None
        yield cloud.emulator
