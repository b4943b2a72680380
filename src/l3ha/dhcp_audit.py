"""The DHCP audit behind ``l3ha dhcp audit`` and ``l3ha check --dhcp``. Pure.

Findings, worst first:

- CRITICAL ``no_dhcp``: a network that needs DHCP and is served by no live,
  enabled DHCP agent (new leases and renewals fail there now);
- WARNING ``below_count``: served, but by fewer than ``agents_per_network``
  live agents;
- WARNING ``above_count``: more live copies than asked for (usually left
  over from a "replicate to every agent" script; ``dhcp repair --trim``);
- WARNING ``dead_agent`` / ``disabled_agent``: an agent that is dead or
  disabled and still hosts networks.

Severities follow the Nagios/Icinga convention of ``l3ha check``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from l3ha.checks import CheckResult, Problem
from l3ha.dhcp_model import DhcpSnapshot, usable
from l3ha.hastate.audit import Severity


@dataclass(frozen=True)
class DhcpFinding:
    """One problem of the DHCP audit."""

    severity: Severity
    kind: str
    detail: str
    network_ids: tuple[str, ...] = ()
    agent_id: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "severity": self.severity.name,
            "kind": self.kind,
            "detail": self.detail,
            "networks": list(self.network_ids),
            "agent": self.agent_id,
        }


def audit_dhcp(snapshot: DhcpSnapshot, agents_per_network: int = 1) -> list[DhcpFinding]:
    """Every finding of the module docstring, worst first, then by kind."""
    findings = _count_findings(snapshot, agents_per_network) + _agent_findings(snapshot)
    return sorted(findings, key=lambda f: (-int(f.severity), f.kind, f.agent_id))


def _count_findings(snapshot: DhcpSnapshot, want: int) -> list[DhcpFinding]:
    unserved: list[str] = []
    below: list[str] = []
    above: list[str] = []
    for network in sorted(snapshot.networks, key=lambda n: n.id):
        live = len(snapshot.serving_agents(network.id))
        if live == 0 and network.needs_dhcp:
            unserved.append(network.id)
        elif 0 < live < want and network.needs_dhcp:
            below.append(network.id)
        elif live > want:
            above.append(network.id)
    findings = []
    if unserved:
        findings.append(
            DhcpFinding(
                Severity.CRITICAL,
                "no_dhcp",
                f"{len(unserved)} network(s) served by no live, enabled DHCP agent",
                tuple(unserved),
            )
        )
    if below:
        findings.append(
            DhcpFinding(
                Severity.WARNING,
                "below_count",
                f"{len(below)} network(s) on fewer than {want} live DHCP agent(s)",
                tuple(below),
            )
        )
    if above:
        findings.append(
            DhcpFinding(
                Severity.WARNING,
                "above_count",
                f"{len(above)} network(s) on more than {want} live DHCP agent(s) "
                "('l3ha dhcp repair --trim' removes the extra copies)",
                tuple(above),
            )
        )
    return findings


def _agent_findings(snapshot: DhcpSnapshot) -> list[DhcpFinding]:
    findings = []
    for agent in sorted(snapshot.agents, key=lambda a: (a.host, a.id)):
        hosted = snapshot.networks_of_agent(agent.id)
        if usable(agent) or not hosted:
            continue
        state = "dead" if not agent.alive else "disabled"
        findings.append(
            DhcpFinding(
                Severity.WARNING,
                f"{state}_agent",
                f"{state} DHCP agent on {agent.host} still hosts {len(hosted)} network(s)",
                hosted,
                agent.id,
            )
        )
    return findings


def dhcp_perfdata(snapshot: DhcpSnapshot, findings: list[DhcpFinding]) -> dict[str, int]:
    """Performance data for the status line."""
    unserved = sum(len(f.network_ids) for f in findings if f.kind == "no_dhcp")
    return {
        "dhcp_agents": len(snapshot.agents),
        "dead_dhcp_agents": sum(1 for a in snapshot.agents if not a.alive),
        "networks": len(snapshot.networks),
        "networks_without_dhcp": unserved,
    }


def worst(findings: list[DhcpFinding]) -> Severity:
    """The severity of the worst finding (OK when there is none)."""
    return max((f.severity for f in findings), default=Severity.OK)


def status_line(findings: list[DhcpFinding], perfdata: dict[str, int]) -> str:
    """``DHCP CRITICAL - ... | key=value ...``"""
    severity = worst(findings)
    if findings:
        text = "; ".join(f.detail for f in findings[:3])
        if len(findings) > 3:
            text += f" (+{len(findings) - 3} more)"
    else:
        text = "every network served by its live DHCP agents"
    perf = " ".join(f"{k}={v}" for k, v in perfdata.items())
    return f"DHCP {severity.name} - {text} | {perf}"


def with_dhcp_findings(result: CheckResult, findings: list[DhcpFinding]) -> CheckResult:
    """``l3ha check --dhcp``: the router check's result with the DHCP findings added."""
    extra = [Problem(f.severity, f"dhcp_{f.kind}", f.detail) for f in findings]
    problems = (*result.problems, *extra)
    severity = max((p.severity for p in problems), default=Severity.OK)
    return replace(result, severity=severity, problems=problems)
