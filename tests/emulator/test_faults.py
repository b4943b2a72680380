"""Faults through POST /_emulator/faults, injected API errors, and scenario files."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from l3ha.clock import ManualClock
from l3ha.emulator import Emulator, FaultError
from l3ha.emulator.faults import fault_from_words, load_scenario

from .conftest import Http, make


def test_fault_endpoint_applies_and_rejects(small: Emulator, api: Http) -> None:
    status, doc, _ = api.call("POST", "/_emulator/faults", {"fault": "kill-agent",
                                                            "host": "net-2"})
    assert status == 200 and doc == {"fault": "kill-agent", "host": "net-2"}
    assert small.world.agents_by_host["net-2"].running is False
    status, doc, _ = api.call("POST", "/_emulator/faults", {"fault": "kill-agent",
                                                            "host": "net-99"})
    assert status == 404
    assert doc["NeutronError"]["message"] == "unknown agent host 'net-99'"
    status, doc, _ = api.call("POST", "/_emulator/faults", {"fault": "melt"})
    assert status == 400 and "unknown fault" in doc["NeutronError"]["message"]


def test_api_errors_outage_and_latency(small: Emulator, api: Http) -> None:
    small.api_errors(1.0, 502)
    status, doc = api.get("/v2.0/agents")
    assert status == 502 and doc["NeutronError"]["type"] == "HTTPBadGateway"
    assert api.get("/_emulator/state")[0] == 200  # the control API is never faulted
    small.api_errors(0.0, 500)
    small.api_outage(30)
    assert api.get("/v2.0/routers")[0] == 503
    small.advance(31)
    assert api.get("/v2.0/routers")[0] == 200
    small.api_latency(60)
    started = time.monotonic()
    assert api.get("/v2.0/routers")[0] == 200
    assert time.monotonic() - started >= 0.06


def test_fault_words_are_validated() -> None:
    assert fault_from_words(["mgmt-partition", "net-1", "30"]).args == {"host": "net-1",
                                                                       "seconds": 30.0}
    for words in (["kill-agent"], ["slow-agent", "net-1", "fast"], ["api-errors", "2", "500"],
                  ["nothing"], ["split-brain", "r", "1", "2"]):
        with pytest.raises(FaultError):
            fault_from_words(words)


def test_scenario_steps_run_at_their_time(clock: ManualClock, tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("- {at: 10, fault: kill-agent, host: net-1}\n"
                        "- {at: 50, fault: revive-agent, host: net-1}\n")
    with make(clock, agents=2, routers=2) as emu:
        emu.schedule_scenario(load_scenario(scenario))
        emu.advance(9)
        assert emu.world.agents_by_host["net-1"].running is True
        emu.advance(2)
        assert emu.world.agents_by_host["net-1"].running is False
        emu.advance(40)
        assert emu.world.agents_by_host["net-1"].running is True


def test_bad_scenarios_name_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("- {at: 1, fault: kill-agent}\n")
    with pytest.raises(FaultError, match="step 1: kill-agent: missing argument host"):
        load_scenario(bad)
    with pytest.raises(FaultError, match="cannot read scenario"):
        load_scenario(tmp_path / "missing.yaml")
    bad.write_text("{not: a list}")
    with pytest.raises(FaultError, match="a scenario is a list"):
        load_scenario(bad)
