"""The health check behind ``l3ha check``, and the one finding machinery of every report.
Pure.

Covers dead agents that still host routers (and disabled agents hosting
non-HA routers, which they tear down), unhosted routers, HA routers with
zero or two active replicas (and the rest of the HA audit), and load
imbalance beyond a threshold (weighted load, as the planner balances it: busy
routers count more). The result follows the Nagios/Icinga plugin
convention: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN, and a status line with
performance data after ``|``.

``Problem`` (a finding), ``CheckResult`` (the findings, their severity and
exit code, the status line and the document of ``-f json|yaml``) and
``about`` serve every report alike: ``l3ha check``, the DHCP audit
(``dhcp_audit``, in its ``Style``) and the ML2/OVN gateway check
(``ovn_checks``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from l3ha.hastate.audit import Finding, Severity, audit_ha_routers
from l3ha.model import Snapshot, group_by
from l3ha.weights import WeightPolicy

ALL_CLEAR = "all routers hosted on live agents, HA routers healthy, load balanced"


@dataclass(frozen=True)
class Problem:
    """One finding of a report: one line of its details."""

    severity: Severity
    kind: str
    detail: str
    ids: tuple[str, ...] = ()  # the routers (networks) it is about
    leads: bool = False  # said first in the status line, whatever its severity (a halt)
    agent_id: str = ""  # the agent it is about, if one

    def as_dict(self, style: Style) -> dict[str, object]:
        doc: dict[str, object] = {"severity": self.severity.name, "kind": self.kind}
        doc.update(detail=self.detail, **{style.ids: list(self.ids)})
        return {**doc, "agent": self.agent_id} if style.agents else doc


@dataclass(frozen=True)
class Style:
    """How a report speaks: its name, its all-clear, which findings its line shows (the worst
    only, or the first three whatever their severity) and its document's keys."""

    title: str = "L3HA"
    all_clear: str = ALL_CLEAR
    worst_only: bool = True
    items: str = "problems"
    ids: str = "routers"
    agents: bool = False


@dataclass(frozen=True)
class CheckResult:
    """A report's verdict, its problems and its performance data."""

    severity: Severity
    problems: tuple[Problem, ...]
    perfdata: dict[str, int] = field(default_factory=dict)
    style: Style = Style()

    def status_line(self) -> str:
        """``L3HA CRITICAL - ... | key=value ...``"""
        if self.severity is Severity.OK:  # what an OK check has to say, after the all-clear
            text = "; ".join([self.style.all_clear, *(p.detail for p in self.problems)])
        else:
            leading = [p for p in self.problems if p.leads]
            worst_only = self.style.worst_only
            rest = [p for p in self.problems if not p.leads]
            rest = [p for p in rest if p.severity == self.severity or not worst_only]
            shown = [*leading, *rest][: max(3, len(leading))]
            text = "; ".join(p.detail for p in shown)
            if len(self.problems) > len(shown):
                text += f" (+{len(self.problems) - len(shown)} more)"
        perf = " ".join(f"{k}={v}" for k, v in self.perfdata.items())
        return f"{self.style.title} {self.severity.name} - {text} | {perf}"

    def document(self) -> dict[str, object]:
        """Every problem as data (``-f json|yaml``)."""
        return {
            "status": self.severity.name,
            "summary": self.status_line(),
            self.style.items: [p.as_dict(self.style) for p in self.problems],
            "perfdata": self.perfdata,
        }


def worst(problems: Sequence[Problem]) -> Severity:
    """The severity of the worst problem (OK when there is none)."""
    return max((p.severity for p in problems), default=Severity.OK)


def about(
    severity: Severity, kind: str, ids: Sequence[str], words: str, noun: str = "router"
) -> Problem:
    """A problem of ``ids``: "N router(s) <words>"."""
    return Problem(severity, kind, f"{len(ids)} {noun}(s) {words}", tuple(ids))


def run_check(
    snapshot: Snapshot,
    imbalance_threshold: int = 25,
    replicas: int = 2,
    weights: WeightPolicy | None = None,
    *,
    watch_status: Mapping[str, Any] | None = None,
    now: float = 0.0,
    expect_daemon: bool = False,
) -> CheckResult:
    """Evaluate the snapshot; ``imbalance_threshold`` is percent over the mean agent load.

    ``watch_status``: the watch daemon's status file (``l3ha.daemon.status``),
    judged at unix time ``now``: its halts lead the status line, they and
    partitioned agents are warnings, and so is a status that has not been
    refreshed for a while. A daemon that stopped cleanly is said in an OK line;
    with ``expect_daemon`` it, or no status at all, is a warning.
    """
    problems = [*_dead_agents(snapshot), *_unhosted(snapshot)]
    problems += watch_problems(watch_status, now, expect_daemon)
    ha_findings = audit_ha_routers(snapshot, replicas=replicas)
    problems += _ha_problems(ha_findings)
    problems += _imbalance(snapshot, imbalance_threshold, weights or WeightPolicy())
    perf = {
        "agents": len(snapshot.agents),
        "dead_agents": sum(1 for a in snapshot.agents if not a.alive),
        "routers": len(snapshot.routers),
        "unhosted": len(snapshot.unhosted_routers()),
        "ha_findings": len(ha_findings),
    }
    return CheckResult(worst(problems), tuple(problems), perf)


def _dead_agents(snapshot: Snapshot) -> list[Problem]:
    """Dead agents still hosting routers, and disabled ones hosting legacy routers.

    A disabled agent tears its routers down (NEUTRON.md): its non-HA routers
    are dark although their binding stays. (Its HA replicas are the audit's.)
    """
    out = []
    for agent in sorted(snapshot.agents, key=lambda a: a.host):
        hosted = snapshot.bindings_of_agent(agent.id)
        if not agent.alive and hosted:
            ids = tuple(b.router_id for b in hosted)
            detail = f"dead agent {agent.host} hosts {len(ids)} router(s)"
            out.append(Problem(Severity.CRITICAL, "dead_agent_hosting_routers", detail, ids))
        elif not agent.admin_state_up:
            dark = [
                b.router_id
                for b in hosted
                if b.router_id in snapshot.routers_by_id
                and not snapshot.routers_by_id[b.router_id].ha
            ]
            if dark:
                words = f"disabled agent {agent.host} hosts {len(dark)} non-HA router(s), "
                detail = words + "which it has torn down"
                kind = "disabled_agent_hosting_routers"
                out.append(Problem(Severity.CRITICAL, kind, detail, tuple(dark)))
    return out


def _unhosted(snapshot: Snapshot) -> list[Problem]:
    ids = [r.id for r in snapshot.unhosted_routers()]
    return [about(Severity.CRITICAL, "unhosted", ids, "have no agent")] if ids else []


def _ha_problems(findings: list[Finding]) -> list[Problem]:
    return [
        Problem(
            group[0].severity,
            f"ha_{kind}",
            f"{len(group)} HA router(s): {kind.replace('_', ' ')}",
            tuple(f.router_id for f in group),
        )
        for kind, group in sorted(group_by(findings, lambda f: f.kind).items())
    ]


def _imbalance(snapshot: Snapshot, threshold_pct: int, weights: WeightPolicy) -> list[Problem]:
    live = [a for a in snapshot.agents if a.usable and a.can_host_centralized]
    if len(live) < 2:
        return []
    routers = snapshot.routers_by_id
    load = {
        a.host: sum(
            weights.weight(routers[b.router_id])
            for b in snapshot.bindings_of_agent(a.id)
            if b.router_id in routers
        )
        for a in live
    }
    mean = sum(load.values()) / len(load)
    busiest = max(load, key=lambda h: (load[h], h))
    # Load comes in whole routers: even a perfect placement may differ by the largest one.
    granularity = max((weights.weight(r) for r in snapshot.routers), default=1)
    allowed = max(mean * (1 + threshold_pct / 100), mean + granularity)
    if load[busiest] <= allowed:
        return []
    detail = f"agent {busiest} carries load {load[busiest]}, mean is {mean:.1f} "
    detail += f"(threshold {threshold_pct}%); run 'l3ha rebalance'"
    return [Problem(Severity.WARNING, "imbalance", detail)]


def _halt_problems(halts: Any, kind: str, words: str) -> list[Problem]:
    """One warning per halt of the status file (``halts``: its list of halts)."""
    out = []
    for halt in halts if isinstance(halts, list) else []:
        reason = halt.get("reason", "?") if isinstance(halt, Mapping) else "?"
        message = halt.get("message", "") if isinstance(halt, Mapping) else str(halt)
        detail = f"{words} ({reason}): {message}"
        out.append(Problem(Severity.WARNING, f"{kind}_{reason}", detail, leads=True))
    return out


def _not_watching(status: Mapping[str, Any] | None, expect_daemon: bool) -> list[Problem]:
    """No daemon status, or a daemon that stopped cleanly: a warning only when one is expected."""
    severity = Severity.WARNING if expect_daemon else Severity.OK
    if status is None:
        return [Problem(severity, "watch_absent", "no status from 'l3ha watch' here")]
    when = datetime.fromtimestamp(float(status.get("updated", 0.0)), UTC)
    detail = f"'l3ha watch' stopped cleanly at {when:%Y-%m-%d %H:%M:%S} UTC"
    return [Problem(severity, "watch_stopped", detail)]


def watch_problems(
    status: Mapping[str, Any] | None, now: float, expect_daemon: bool = False
) -> list[Problem]:
    """What the watch daemon's status says an operator should know."""
    if status is None:
        return _not_watching(None, expect_daemon) if expect_daemon else []
    if status.get("state") == "stopped":
        return _not_watching(status, expect_daemon)
    age = now - float(status.get("updated", 0.0))
    if age > 3 * float(status.get("interval", 10.0)) + 30:
        detail = f"the watch daemon's status is {age:.0f} s old: is 'l3ha watch' running?"
        return [Problem(Severity.WARNING, "watch_stale", detail)]
    out = _halt_problems(status.get("halts"), "watch_halt", "watch halted")
    dhcp = status.get("dhcp")
    if isinstance(dhcp, Mapping):
        out += _halt_problems(dhcp.get("halts"), "watch_dhcp_halt", "watch halted DHCP")
        if dhcp.get("read_error"):
            detail = f"watch could not read the DHCP agents: {dhcp['read_error']}"
            out.append(Problem(Severity.WARNING, "watch_dhcp_read_failed", detail))
    partitioned = ", ".join(str(h) for h in status.get("partitioned") or [])
    if partitioned:
        detail = f"agent(s) cut off from the control plane but still forwarding: {partitioned}"
        out.append(Problem(Severity.WARNING, "watch_partitioned", detail))
    return out
