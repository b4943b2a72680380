"""Against the Neutron API emulator: the TCP data-plane listeners of the routers on a killed
agent show outages that match the emulator's own data-plane view, and the event poller (through
the real cloud adapter) puts the agent's death and return on the same timeline."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from l3ha.clock import SystemClock
from l3ha.cloud.adapter import connect
from l3ha.emulator import CLOUD_NAME, Emulator
from l3ha.emulator.testing import Clocking, emulated_cloud
from l3ha.probe.events import CloudEventPoller
from l3ha.probe.runner import ProbeConfig
from l3ha.probe.targets import parse_target

from .servers import ProbeThread

INTERVAL = 0.02
TOLERANCE = 0.04  # the emulator's simulation ticks every 25 ms


@pytest.fixture
def emulator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    settings = {"agents": 3, "routers": 6, "dataplane_listeners": 6, "report_interval": 0.2,
                "agent_down_time": 1.0, "router_base_time": 0.05}  # fmt: skip
    with emulated_cloud(Clocking.REAL, workdir=tmp_path, **settings) as cloud:
        emu = cloud.emulator
        assert emu is not None and cloud.clouds_yaml is not None
        monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(cloud.clouds_yaml))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            view = emu.dataplane()
            if all(v["reachable"] and not v["address"].endswith(":0") for v in view.values()):
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"emulated routers never became reachable: {emu.dataplane()}")
        yield emu


def test_killed_agent_outages_match_the_emulators_data_plane(emulator: Emulator) -> None:
    before = emulator.dataplane()
    targets = tuple(parse_target("tcp", f"{rid}={v['address']}") for rid, v in before.items())
    poller = CloudEventPoller(connect(CLOUD_NAME, timeout=5), SystemClock(), interval=0.2)
    config = ProbeConfig(targets, interval=INTERVAL, timeout=0.2, duration=2.6)
    probe = ProbeThread(config, sources=[poller]).start()
    probe.wait_started()
    time.sleep(0.3)
    emulator.faults.kill_agent("net-1")
    time.sleep(1.6)
    emulator.faults.revive_agent("net-1")
    result = probe.join()
    after = emulator.dataplane()

    down = {rid for rid, v in after.items() if v["downtime_s"] > 0}
    assert 0 < len(down) < len(after), after
    for target, tracker in zip(targets, result.trackers, strict=True):
        block = tracker.summary(result.origin, result.until)
        expected = after[target.label]["downtime_s"]
        assert after[target.label]["reachable"], target.label
        assert abs(block["total_downtime_s"] - expected) <= INTERVAL + TOLERANCE, target.label
        assert block["outage_count"] == (1 if target.label in down else 0), target.label
    texts = [e.text for e in result.events]
    assert texts[0].startswith("cloud: watching 3 L3 agents (3 alive)")
    assert "agent net-1: dead" in texts
    assert texts.index("agent net-1: dead") < texts.index("agent net-1: alive")


def test_cli_events_from_the_emulator_land_in_the_report(
    emulator: Emulator, tmp_path: Path
) -> None:
    router = next(iter(emulator.dataplane()))
    out = tmp_path / "out"
    runner = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "l3ha.cli.main",
            "probe",
            "--tcp",
            "127.0.0.1:1",
            "--interval",
            "0.1",
            "--duration",
            "3",
            "--output",
            str(out),
            "--events",
            "--events-interval",
            "0.2",
            "--router",
            router,
            "--os-cloud",
            CLOUD_NAME,
            "-f",
            "json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while not (out / "samples.jsonl").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        emulator.faults.kill_agent("net-1")
        stdout, stderr = runner.communicate(timeout=30)
    finally:
        runner.kill()
    assert runner.returncode == 0, stderr
    assert json.loads(stdout)["events"] >= 2
    events = [json.loads(x)["text"] for x in (out / "events.jsonl").read_text().splitlines()]
    assert re.fullmatch(r"cloud: watching 3 L3 agents \(3 alive\); router \S+ on net-\d", events[0])
    assert "agent net-1: dead" in events
    assert "agent net-1: dead" in (out / "timeline.txt").read_text()
