"""HA router state audit: split brain, no active replica, dead or missing replicas. Pure.

Takes a snapshot (bindings carry each replica's ``ha_state``) and returns
findings, each with a severity in the Nagios sense. CRITICAL: routers whose
traffic is or may be lost (no active replica, two actives, a replica whose
state is unknown, every hosting agent dead). WARNING: lost redundancy (a replica on
a dead or disabled agent, fewer live replicas than wanted, every replica
crowded in one AZ).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, StrEnum

from l3ha.model import Agent, Binding, HAState, Router, Snapshot


class Severity(IntEnum):
    """Nagios/Icinga severities; the value is the plugin exit code."""

    OK = 0
    WARNING = 1
    CRITICAL = 2
    UNKNOWN = 3


class FindingKind(StrEnum):
    """What is wrong with one HA router."""

    NO_ACTIVE = "no_active"
    SPLIT_BRAIN = "split_brain"
    UNKNOWN = "unknown"
    REPLICA_ON_DEAD_AGENT = "replica_on_dead_agent"
    REPLICA_ON_DISABLED_AGENT = "replica_on_disabled_agent"
    TOO_FEW_REPLICAS = "too_few_replicas"
    AZ_CROWDED = "az_crowded"


SEVERITY = {
    FindingKind.NO_ACTIVE: Severity.CRITICAL,
    FindingKind.SPLIT_BRAIN: Severity.CRITICAL,
    FindingKind.UNKNOWN: Severity.CRITICAL,
    FindingKind.REPLICA_ON_DEAD_AGENT: Severity.WARNING,
    FindingKind.REPLICA_ON_DISABLED_AGENT: Severity.WARNING,
    FindingKind.TOO_FEW_REPLICAS: Severity.WARNING,
    FindingKind.AZ_CROWDED: Severity.WARNING,
}


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem of one HA router, with the agents it concerns."""

    router_id: str
    kind: FindingKind
    detail: str
    agents: tuple[str, ...] = ()

    @property
    def severity(self) -> Severity:
        return SEVERITY[self.kind]


def audit_ha_routers(snapshot: Snapshot, replicas: int = 2) -> list[Finding]:
    """Every finding for every HA router, ordered by router id then kind."""
    usable_azs = {
        a.availability_zone for a in snapshot.agents if a.usable and a.can_host_centralized
    }
    findings: list[Finding] = []
    for router in sorted(snapshot.routers, key=lambda r: r.id):
        if router.ha:
            findings.extend(_audit_router(snapshot, router, replicas, len(usable_azs)))
    return findings


def worst_severity(findings: list[Finding]) -> Severity:
    """The severity a check reports for these findings."""
    return max((f.severity for f in findings), default=Severity.OK)


def _finding(router: Router, kind: FindingKind, detail: str, agents: list[Agent]) -> Finding:
    """A finding about ``router`` that concerns ``agents``."""
    return Finding(router.id, kind, detail, tuple(a.id for a in agents))


def _audit_router(
    snapshot: Snapshot, router: Router, replicas: int, usable_az_count: int
) -> list[Finding]:
    bindings = snapshot.bindings_of_router(router.id)
    agents = [snapshot.agents_by_id.get(b.agent_id) for b in bindings]
    hosted = [(b, a) for b, a in zip(bindings, agents, strict=True) if a is not None]
    findings = _state_findings(router, hosted)
    for _, agent in hosted:
        if not agent.alive:
            detail = f"replica on dead agent {agent.host}"
            findings.append(_finding(router, FindingKind.REPLICA_ON_DEAD_AGENT, detail, [agent]))
        elif not agent.admin_state_up:
            detail = f"replica on disabled agent {agent.host}"
            kind = FindingKind.REPLICA_ON_DISABLED_AGENT
            findings.append(_finding(router, kind, detail, [agent]))
    live = [a for _, a in hosted if a.usable]
    if len(live) < replicas:
        detail = f"{len(live)} live replica(s), want {replicas}"
        findings.append(_finding(router, FindingKind.TOO_FEW_REPLICAS, detail, live))
    live_azs = {a.availability_zone for a in live}
    if len(live) > 1 and len(live_azs) == 1 and usable_az_count > 1:
        detail = f"all {len(live)} live replicas in AZ {next(iter(live_azs))}"
        findings.append(_finding(router, FindingKind.AZ_CROWDED, detail, live))
    return findings


def _state_findings(router: Router, hosted: list[tuple[Binding, Agent]]) -> list[Finding]:
    if not hosted:
        return [Finding(router.id, FindingKind.NO_ACTIVE, "no agent hosts this HA router")]
    agents = [a for _, a in hosted]
    active = [a for b, a in hosted if b.ha_state == HAState.ACTIVE]
    if len(active) >= 2:
        hosts = ", ".join(sorted(a.host for a in active))
        return [_finding(router, FindingKind.SPLIT_BRAIN, f"active on {hosts}", active)]
    if not any(a.alive for a in agents):
        detail = "every hosting agent is dead: state unknown"
        return [_finding(router, FindingKind.UNKNOWN, detail, agents)]
    unknown = [a for b, a in hosted if b.ha_state == HAState.UNKNOWN]
    if unknown:
        hosts = ", ".join(sorted(a.host for a in unknown))
        detail = f"replica state unknown on {hosts}"
        return [_finding(router, FindingKind.UNKNOWN, detail, unknown)]
    if not active:
        return [_finding(router, FindingKind.NO_ACTIVE, "no replica is active", agents)]
    return []
