"""``l3ha.emulator.testing``: the one factory of emulated clouds for tests."""

from __future__ import annotations

import json
import os
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from l3ha.clock import ManualClock
from l3ha.emulator.testing import SMALL, Clocking, emulated_cloud, serve_flags


def _agents(url: str) -> list[dict[str, object]]:
    with urllib.request.urlopen(url + "v2.0/agents", timeout=10) as answer:
        return list(json.load(answer)["agents"])


def test_in_process_on_a_manual_clock_time_moves_only_when_advanced(tmp_path: Path) -> None:
    clock = ManualClock()
    with emulated_cloud(clock, workdir=tmp_path, **SMALL) as cloud:
        assert cloud.emulator is not None and cloud.emulator.clock is clock
        before = {a["id"]: a["heartbeat_timestamp"] for a in _agents(cloud.url)}
        assert {a["id"]: a["heartbeat_timestamp"] for a in _agents(cloud.url)} == before
        cloud.emulator.advance(2.0)
        after = {a["id"]: a["heartbeat_timestamp"] for a in _agents(cloud.url)}
        assert all(after[agent] != before[agent] for agent in before)
        entry = yaml.safe_load((tmp_path / "clouds.yaml").read_text())["clouds"][cloud.name]
        assert entry["network_endpoint_override"] == cloud.url
    assert cloud.environ() == {
        "OS_CLIENT_CONFIG_FILE": str(tmp_path / "clouds.yaml"),
        "OS_CLOUD": "l3ha-emulator",
    }


def test_in_process_on_the_real_clock_agents_heartbeat_by_themselves() -> None:
    with emulated_cloud(Clocking.REAL, agents=2, routers=2, report_interval=0.1) as cloud:
        before = {a["id"]: a["heartbeat_timestamp"] for a in _agents(cloud.url)}
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            now = {a["id"]: a["heartbeat_timestamp"] for a in _agents(cloud.url)}
            if all(now[agent] != before[agent] for agent in before):
                break
            time.sleep(0.1)
        else:
            pytest.fail("no heartbeat moved on the real clock")
        assert cloud.clouds_yaml is None and cloud.environ() == {}


def test_a_served_cloud_runs_in_another_process_and_the_environment_is_restored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OS_CLOUD", "before")
    monkeypatch.delenv("OS_CLIENT_CONFIG_FILE", raising=False)
    settings = {"agents": 3, "routers": 4, "neutron_auto_failover": True}
    with emulated_cloud(
        "real", server=True, workdir=tmp_path, environ=os.environ, **settings
    ) as cloud:
        assert cloud.emulator is None
        assert sorted(a["host"] for a in _agents(cloud.url)) == ["net-1", "net-2", "net-3"]
        assert os.environ["OS_CLOUD"] == "l3ha-emulator"
        assert os.environ["OS_CLIENT_CONFIG_FILE"] == str(tmp_path / "clouds.yaml")
    assert os.environ["OS_CLOUD"] == "before" and "OS_CLIENT_CONFIG_FILE" not in os.environ
    with pytest.raises(OSError):
        _agents(cloud.url)  # the server process is gone


def test_serve_flags_follow_the_config_fields() -> None:
    assert serve_flags({"agents": 3, "neutron_auto_failover": True, "keystone": False}) == [
        "--agents", "3", "--neutron-auto-failover",
    ]  # fmt: skip
    assert serve_flags({"router_auto_schedule": False}) == ["--no-router-auto-schedule"]
    with pytest.raises(TypeError, match="no setting 'agnets'"):
        serve_flags({"agnets": 3})


def test_a_served_cloud_cannot_run_on_a_manual_clock(tmp_path: Path) -> None:
    with (
        pytest.raises(ValueError, match="real clock"),
        emulated_cloud(Clocking.MANUAL, server=True, workdir=tmp_path),
    ):
        pass
