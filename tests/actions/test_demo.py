"""``l3ha demo`` (what ``make demo`` runs) tells the whole story and ends healthy."""

from __future__ import annotations

import os
import subprocess
import sys


def test_demo_kills_evacuates_and_rebalances() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    proc = subprocess.run(
        [sys.executable, "-m", "l3ha.cli.main", "demo", "--agents", "4", "--routers", "40"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr
    assert "net-2  no" in out  # the killed agent turned dead
    assert "L3HA CRITICAL - dead agent net-2" in out
    assert "agent net-1 is alive and enabled" in proc.stdout + proc.stderr
    assert "L3HA OK" in out
    assert "Data plane: 0 of 40 routers unreachable now" in out
