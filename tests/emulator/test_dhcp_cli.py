"""``l3ha emulator serve`` with DHCP agents and tenant networks, as a subprocess."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path

from .test_cli import L3HA, env, run

__all__ = ["env"]  # the fixture, shared with test_cli


def test_bad_dhcp_options_are_one_line_errors(env: dict[str, str]) -> None:
    for args, message in [
        (["--networks", "-1"], "networks must be 0..16384, not -1"),
        (["--dhcp-agents-per-network", "0"], "dhcp-agents-per-network must be greater than 0"),
        (["--dhcp-concurrency", "0"], "dhcp-concurrency must be greater than 0"),
        (["--dhcp-host-prefix", "a b"], "dhcp-host-prefix must be a host name prefix"),
        (["--dhcp-network-time", "nan"], "--dhcp-network-time: must be a finite number"),
        (["--networks", "20000"], "networks must be 0..16384, not 20000"),
    ]:
        done = run([*L3HA, "emulator", "serve", "--port", "0", *args], env)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], done.stderr


def test_help_explains_the_dhcp_options(env: dict[str, str]) -> None:
    done = run([*L3HA, "emulator", "serve", "--help"], env)
    assert done.returncode == 0
    for option in (
        "--dhcp-agents",
        "--networks",
        "--dhcp-agents-per-network",
        "--dhcp-host-prefix",
        "--no-network-auto-schedule",
    ):
        assert option in done.stdout


def test_served_dhcp_agents_die_with_their_node(env: dict[str, str], tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [
            *L3HA,
            "emulator",
            "serve",
            "--port",
            "0",
            "--agents",
            "2",
            "--routers",
            "2",
            "--dhcp-agents",
            "2",
            "--networks",
            "4",
            "--clouds-yaml",
            str(tmp_path / "c.yaml"),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        with urllib.request.urlopen(f"{url}v2.0/agents?agent_type=DHCP%20agent", timeout=10) as r:
            agents = json.load(r)["agents"]
        assert sorted(a["host"] for a in agents) == ["net-1", "net-2"]
        assert all(a["configurations"]["networks"] == 2 for a in agents)
        done = run([*L3HA, "emulator", "fault", "--url", url, "kill-agent", "net-1"], env)
        assert done.returncode == 0, done.stderr
        with urllib.request.urlopen(f"{url}_emulator/state", timeout=10) as r:
            state = json.load(r)
        running = {row["host"]: row["running"] for row in state["dhcp_agents"]}
        assert running == {"net-1": False, "net-2": True}
        assert state["dhcp"]["unserved"] == 2
        assert not next(a for a in state["agents"] if a["host"] == "net-1")["running"]
    finally:
        proc.terminate()
        proc.wait(timeout=15)
