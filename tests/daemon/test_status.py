"""The watch status file: the DHCP side's halts and read errors reach ``l3ha check``."""

from __future__ import annotations

from pathlib import Path

from l3ha.checks import watch_problems
from l3ha.daemon.status import (
    dhcp_status,
    read_status,
    status_document,
    stopped_document,
    write_status,
)
from l3ha.hastate.audit import Severity
from l3ha.model import Halt, HaltReason


def _document(now: float, dhcp: dict[str, object] | None) -> dict[str, object]:
    return status_document(
        member="local",
        leader=True,
        updated=now,
        interval=10.0,
        halts=(),
        verdicts={"alive": 3},
        partitioned=(),
        dhcp=dhcp,
    )


def test_a_dhcp_halt_round_trips_and_is_a_warning_named_dhcp(tmp_path: Path) -> None:
    now = 1_000_000.0
    halt = Halt(HaltReason.CONTROL_PLANE_SUSPECT, "3 of 3 enabled DHCP agents look dead")
    write_status(tmp_path, _document(now, dhcp_status((halt,), {"dead": 3}, "")))
    status = read_status(tmp_path)
    assert status is not None and status["dhcp"]["verdicts"] == {"dead": 3}
    (problem,) = watch_problems(status, now + 1)
    assert problem.kind == "watch_dhcp_halt_control_plane_suspect"
    assert problem.detail == (
        "watch halted DHCP (control_plane_suspect): 3 of 3 enabled DHCP agents look dead"
    )


def test_a_dhcp_read_error_is_a_warning_and_no_dhcp_section_is_none(tmp_path: Path) -> None:
    now = 1_000_000.0
    write_status(tmp_path, _document(now, dhcp_status((), {}, "list DHCP agents: 503")))
    status = read_status(tmp_path)
    assert status is not None
    (problem,) = watch_problems(status, now)
    assert problem.kind == "watch_dhcp_read_failed" and "503" in problem.detail
    write_status(tmp_path, _document(now, None))
    status = read_status(tmp_path)
    assert status is not None and "dhcp" not in status
    assert watch_problems(status, now) == []


def test_a_stopped_document_says_stopped_and_check_no_longer_calls_it_stale(
    tmp_path: Path,
) -> None:
    write_status(tmp_path, stopped_document(None, member="local", stopped=1000.0, interval=10.0))
    status = read_status(tmp_path)
    assert status is not None and status["state"] == "stopped" and status["halts"] == []
    last = _document(900.0, None)
    kept = stopped_document(last, member="local", stopped=1000.0, interval=10.0)
    assert kept["verdicts"] == {"alive": 3} and kept["updated"] == 900.0
    assert (kept["state"], kept["stopped"], last["state"]) == ("stopped", 1000.0, "running")
    (problem,) = watch_problems(status, now=1_000_000.0)
    assert problem.kind == "watch_stopped" and problem.severity is Severity.OK
    write_status(tmp_path, _document(1000.0, None))
    assert read_status(tmp_path)["state"] == "running"  # type: ignore[index]
    (stale,) = watch_problems(read_status(tmp_path), now=1_000_000.0)  # type: ignore[arg-type]
    assert stale.kind == "watch_stale"
