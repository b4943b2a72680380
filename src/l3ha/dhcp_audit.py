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

Severities, the status line and the exit code are ``l3ha check``'s (``l3ha.checks``).
"""

from __future__ import annotations

from dataclasses import replace

from l3ha.checks import CheckResult, Problem, Style, about, worst
from l3ha.dhcp_model import DhcpSnapshot, usable
from l3ha.hastate.audit import Severity

#: How the DHCP audit's report speaks (the router check's machinery, its own words).
DHCP_STYLE = Style(
    title="DHCP",
    all_clear="every network served by its live DHCP agents",
    worst_only=False,
    items="findings",
    ids="networks",
    agents=True,
)


def audit_dhcp(snapshot: DhcpSnapshot, agents_per_network: int = 1) -> list[Problem]:
    """Every finding of the module docstring, worst first, then by kind."""
    findings = _count_findings(snapshot, agents_per_network) + _agent_findings(snapshot)
    return sorted(findings, key=lambda f: (-int(f.severity), f.kind, f.agent_id))


def _count_findings(snapshot: DhcpSnapshot, want: int) -> list[Problem]:
    found: dict[str, list[str]] = {"no_dhcp": [], "below_count": [], "above_count": []}
    for network in sorted(snapshot.networks, key=lambda n: n.id):
        live = len(snapshot.serving_agents(network.id))
        if live == 0 and network.needs_dhcp:
            found["no_dhcp"].append(network.id)
        elif 0 < live < want and network.needs_dhcp:
            found["below_count"].append(network.id)
        elif live > want:
            found["above_count"].append(network.id)
    words = {
        "no_dhcp": (Severity.CRITICAL, "served by no live, enabled DHCP agent"),
        "below_count": (Severity.WARNING, f"on fewer than {want} live DHCP agent(s)"),
        "above_count": (
            Severity.WARNING,
            f"on more than {want} live DHCP agent(s) "
            "('l3ha dhcp repair --trim' removes the extra copies)",
        ),
    }
    return [
        about(severity, kind, found[kind], text, "network")
        for kind, (severity, text) in words.items()
        if found[kind]
    ]


def _agent_findings(snapshot: DhcpSnapshot) -> list[Problem]:
    findings = []
    for agent in sorted(snapshot.agents, key=lambda a: (a.host, a.id)):
        hosted = snapshot.networks_of_agent(agent.id)
        if usable(agent) or not hosted:
            continue
        state = "dead" if not agent.alive else "disabled"
        detail = f"{state} DHCP agent on {agent.host} still hosts {len(hosted)} network(s)"
        kind = f"{state}_agent"
        findings.append(Problem(Severity.WARNING, kind, detail, hosted, agent_id=agent.id))
    return findings


def dhcp_report(snapshot: DhcpSnapshot, agents_per_network: int = 1) -> CheckResult:
    """``l3ha dhcp audit``: the findings, worst first, with their performance data."""
    findings = audit_dhcp(snapshot, agents_per_network)
    unserved = sum(len(f.ids) for f in findings if f.kind == "no_dhcp")
    perf = {
        "dhcp_agents": len(snapshot.agents),
        "dead_dhcp_agents": sum(1 for a in snapshot.agents if not a.alive),
        "networks": len(snapshot.networks),
        "networks_without_dhcp": unserved,
    }
    return CheckResult(worst(findings), tuple(findings), perf, DHCP_STYLE)


def with_dhcp_findings(result: CheckResult, findings: list[Problem]) -> CheckResult:
    """``l3ha check --dhcp``: the router check's result with the DHCP findings added."""
    extra = [Problem(f.severity, f"dhcp_{f.kind}", f.detail) for f in findings]
    problems = (*result.problems, *extra)
    return replace(result, severity=worst(problems), problems=problems)
