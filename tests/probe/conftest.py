"""Session fixture of the probe tests: sweep leftover test namespaces (as root).

A crashed or killed run leaves its ``l3ha-pr-<pid>-*`` namespaces (and any
process in them) behind; they are removed when the next session starts, and
this session's own when it ends.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from .servers import sweep_namespaces


@pytest.fixture(scope="session", autouse=True)
def _sweep_leftover_namespaces() -> Iterator[None]:
    can_sweep = os.geteuid() == 0 and shutil.which("ip") is not None
    if can_sweep:
        sweep_namespaces(include_own=False)
    yield
    if can_sweep:
        sweep_namespaces(include_own=True)
