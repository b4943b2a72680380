"""``l3ha demo`` (what ``make demo`` runs) tells the whole story and ends healthy."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _demo(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    return subprocess.run(
        [sys.executable, "-m", "l3ha.cli.main", "demo", *args],
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
        env=env,
    )


@pytest.mark.slow
def test_demo_watch_halts_through_a_broker_restart_and_evacuates_a_dead_agent() -> None:
    proc = _demo("--agents", "4", "--routers", "60")
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr + out
    assert "HALT (control_plane_suspect)" in out
    assert "routers l3ha moved during the outage: 0 " in out
    assert "net-2: suspect -> dead" in out
    assert "evacuate net-2: agent net-2 is dead (l3ha's observation)" in out
    assert "off net-2 and forwarding again" in out
    assert "unhosted routers at the end: 0" in out
    after = [line.split() for line in out.splitlines() if line.strip().startswith("net-2 ")]
    assert after and after[-1][2] == "0"  # no router left on the dead agent


def test_demo_commands_kills_evacuates_and_rebalances() -> None:
    proc = _demo("--commands", "--agents", "4", "--routers", "40")
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr
    assert "| net-2 | False " in out  # the killed agent turned dead
    assert "L3HA CRITICAL - dead agent net-2" in out
    assert "agent net-1 is alive and enabled" in proc.stdout + proc.stderr
    assert "L3HA OK" in out
    assert "Data plane: 0 of 40 routers unreachable now" in out
