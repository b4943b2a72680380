"""How a rolling run ended: per host what it went through, and the summary's rows. Pure.

``HostSummary`` is one host's line of the end-of-run table: the routers (and
DHCP networks) its drain moved out and its restore moved back, what the final
rebalance moved onto and off it, the longest outage the probe saw while it
was worked on (None when no probe ran: an outage nobody measured is "n/a",
never 0) and the time taken. ``RollingReport`` adds the steps, why the run
stopped and the overall figures; ``rows`` and ``document`` are what the
command line prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from l3ha.operations.rolling.plan import StepKey

NOT_MEASURED = "n/a"


@dataclass
class HostSummary:
    """What one host went through (the end-of-run table)."""

    host: str
    moved_out: int = 0  # routers
    moved_back: int = 0
    networks_out: int = 0  # DHCP networks
    networks_back: int = 0
    rebalanced_in: int = 0  # routers the final rebalance moved onto the host
    rebalanced_out: int = 0  # ... and off it
    longest_outage_s: float | None = None  # None: no probe ran
    seconds: float = 0.0
    status: str = "pending"
    started: float | None = None

    def count(self, unit: str, out: int, back: int = 0) -> None:
        """What a participant moved off the host and back onto it, in its ``unit``."""
        if unit == "networks":
            self.networks_out += out
            self.networks_back += back
        else:
            self.moved_out += out
            self.moved_back += back


@dataclass
class RollingReport:
    """How the run ended: per host, the steps (dry run: planned), and why it stopped."""

    run_id: int | None
    hosts: list[HostSummary]
    steps: list[tuple[StepKey, str]] = field(default_factory=list)
    stopped: str = ""
    rebalance_moves: int = 0
    probed: bool = False
    longest_outage_s: float = 0.0
    longest_outage_target: str = ""
    #: Hosts outside the run the final rebalance moved routers onto (+) or off (-).
    rebalanced_elsewhere: dict[str, int] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return 1 if self.stopped else 0

    @property
    def dry_run(self) -> bool:
        return self.run_id is None

    @property
    def rolled_dhcp(self) -> bool:
        return any(k.participant == "dhcp" for k, _ in self.steps)


def _outage(seconds: float | None, digits: int) -> float | str | None:
    return None if seconds is None else round(seconds, digits)


def rows(report: RollingReport, *, table: bool) -> list[dict[str, Any]]:
    """One row per host; for a table the columns that say something ("n/a": not probed)."""
    if report.dry_run and table:
        planned = [
            {"host": h.host, "status": h.status, "would_move": h.moved_out} for h in report.hosts
        ]
        if report.rolled_dhcp:
            for line, host in zip(planned, report.hosts, strict=True):
                line["would_move_networks"] = host.networks_out
        return planned
    result = []
    for h in report.hosts:
        row: dict[str, Any] = {"host": h.host, "status": h.status, "moved_out": h.moved_out,
                               "moved_back": h.moved_back}  # fmt: skip
        if report.rolled_dhcp or not table:
            row |= {"networks_out": h.networks_out, "networks_back": h.networks_back}
        if report.rebalance_moves or not table:
            row |= {"rebalanced_in": h.rebalanced_in, "rebalanced_out": h.rebalanced_out}
        outage = _outage(h.longest_outage_s, 2)
        row["longest_outage_s"] = NOT_MEASURED if table and outage is None else outage
        row["seconds"] = round(h.seconds, 1)
        result.append(row)
    return result


def document(report: RollingReport) -> dict[str, Any]:
    """The whole report as data (``-f json|yaml``); an outage not measured is null."""
    steps = [{"host": k.host, "step": k.label, "status": s} for k, s in report.steps]
    return {
        "run": report.run_id,
        "hosts": rows(report, table=False),
        "steps": steps,
        "stopped": report.stopped,
        "rebalance_moves": report.rebalance_moves,
        "rebalanced_elsewhere": dict(report.rebalanced_elsewhere),
        "longest_outage_s": _outage(report.longest_outage_s if report.probed else None, 3),
        "longest_outage_target": report.longest_outage_target,
    }


def closing_lines(report: RollingReport) -> list[str]:
    """The lines under the table: the rebalance, the longest outage, why the run stopped."""
    lines = []
    if report.rebalance_moves:
        elsewhere = ", ".join(f"{h} {n:+d}" for h, n in sorted(report.rebalanced_elsewhere.items()))
        lines.append(
            f"rebalance: {report.rebalance_moves} move(s)"
            + (f" (hosts outside the run: {elsewhere})" if elsewhere else "")
        )
    if not report.dry_run:
        if not report.probed:
            lines.append(f"longest outage: {NOT_MEASURED} (no probe ran)")
        elif report.longest_outage_target:
            lines.append(
                f"longest outage: {report.longest_outage_s:.2f} s ({report.longest_outage_target})"
            )
        else:
            lines.append("longest outage: none seen")
    if report.stopped:
        lines.append(f"stopped: {report.stopped}")
        lines.append("(fix it, then: l3ha rolling --resume)")
    return lines
