"""Fixtures of the executor tests: ``env``, a small running emulator (stopped afterwards)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.executor.emulator_env import Env, start_env


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    environment = start_env(tmp_path, monkeypatch)
    yield environment
    environment.closing.close()
