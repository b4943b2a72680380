"""The watch status file: the DHCP side's halts and read errors reach ``l3ha check``."""

from __future__ import annotations

from pathlib import Path

from l3ha.checks import watch_problems
from l3ha.daemon.status import dhcp_status, read_status, status_document, write_status
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
