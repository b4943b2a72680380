"""Faults through POST /_emulator/faults, injected API errors, and scenario files."""

from __future__ import annotations

import socket
import struct
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
    small.faults.api_errors(1.0, 502)
    status, doc = api.get("/v2.0/agents")
    assert status == 502 and doc["NeutronError"]["type"] == "HTTPBadGateway"
    assert api.get("/_emulator/state")[0] == 200  # the control API is never faulted
    small.faults.api_errors(0.0, 500)
    small.faults.api_outage(30)
    assert api.get("/v2.0/routers")[0] == 503
    small.advance(31)
    assert api.get("/v2.0/routers")[0] == 200
    small.faults.api_latency(60)
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


@pytest.mark.parametrize("words", [["broker-outage", "nan"], ["mgmt-partition", "net-1", "inf"],
                                   ["api-latency", "-inf"], ["slow-agent", "net-1", "nan"],
                                   ["api-errors", "nan", "500"]])
def test_non_finite_fault_values_are_rejected(words: list[str]) -> None:
    with pytest.raises(FaultError, match="finite"):
        fault_from_words(words)


def test_non_finite_scenario_values_are_rejected(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("- {at: .inf, fault: kill-agent, host: net-1}\n")
    with pytest.raises(FaultError, match="step 1: at must be a finite number"):
        load_scenario(bad)
    bad.write_text("- {at: 1, fault: broker-outage, seconds: .nan}\n")
    with pytest.raises(FaultError, match="step 1: broker-outage: seconds must be a finite"):
        load_scenario(bad)


def test_client_hanging_up_early_prints_no_traceback(
    small: Emulator, api: Http, capfd: pytest.CaptureFixture[str]
) -> None:
    small.faults.api_latency(100)
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", small.port), timeout=5) as sock:
            sock.sendall(b"GET /v2.0/routers HTTP/1.1\r\nHost: x\r\n\r\n")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    time.sleep(0.4)  # real time: the server answers after its 100 ms latency
    small.faults.api_latency(0)
    assert api.get("/v2.0/routers")[0] == 200
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Error" not in err, err
