"""The daemon's pure DHCP decisions and the audit's findings, on hand-made snapshots."""

from __future__ import annotations

from l3ha.checks import worst
from l3ha.daemon.decide import decide_dhcp, overlay
from l3ha.dhcp_audit import audit_dhcp
from l3ha.dhcp_model import DhcpBinding, DhcpSnapshot, Network
from l3ha.hastate.audit import Severity
from l3ha.health import Verdict
from l3ha.model import Agent
from l3ha.operations.request import DhcpAction

AGENTS = tuple(Agent(f"d{i}", f"net-{i}") for i in range(1, 4))


def snapshot(hosting: dict[str, tuple[str, ...]]) -> DhcpSnapshot:
    networks = tuple(Network(n) for n in hosting)
    bindings = tuple(DhcpBinding(n, a) for n, agents in hosting.items() for a in agents)
    return DhcpSnapshot(AGENTS, networks, bindings)


def test_a_dead_agent_hosting_networks_is_evacuated_and_nothing_else_is_done() -> None:
    snap = snapshot({"a": ("d1",), "b": ("d2",)})
    verdicts = {"d1": Verdict.DEAD, "d2": Verdict.ALIVE, "d3": Verdict.SUSPECT}
    decisions = decide_dhcp(snap, verdicts, 1)
    assert [(d.action, d.agent) for d in decisions] == [(DhcpAction.EVACUATE, "d1")]
    world = overlay(snap, verdicts)
    # only l3ha's DEAD verdict makes an agent dead; a suspect one still counts as alive
    assert [a.alive for a in world.agents] == [False, True, True]


def test_networks_short_of_copies_are_repaired_and_a_dead_agent_without_networks_is_not():
    snap = snapshot({"a": ("d2",), "b": ()})
    decisions = decide_dhcp(snap, {"d1": Verdict.DEAD, "d2": Verdict.ALIVE}, 1)
    assert [d.action for d in decisions] == [DhcpAction.REPAIR]
    assert "1 network(s)" in decisions[0].reason
    assert decide_dhcp(snapshot({"a": ("d2",)}), {"d2": Verdict.ALIVE}, 1) == []


def test_the_audit_names_each_kind_of_problem() -> None:
    agents = (Agent("d1", "net-1", alive=False), Agent("d2", "net-2"), Agent("d3", "net-3"))
    snap = DhcpSnapshot(
        agents,
        (Network("dark"), Network("extra"), Network("quiet", needs_dhcp=False)),
        (DhcpBinding("dark", "d1"), DhcpBinding("extra", "d2"), DhcpBinding("extra", "d3")),
    )
    findings = audit_dhcp(snap, 1)
    assert [(f.kind, f.ids) for f in findings] == [
        ("no_dhcp", ("dark",)),
        ("above_count", ("extra",)),
        ("dead_agent", ("dark",)),
    ]
    assert worst(findings) is Severity.CRITICAL
    assert [f.kind for f in audit_dhcp(snap, 2)] == ["no_dhcp", "dead_agent"]
