"""The HA audit on hand-built snapshots: each kind of finding, and a healthy router has none."""

from __future__ import annotations

from l3ha.hastate.audit import FindingKind, Severity, audit_ha_routers, worst_severity
from l3ha.model import Agent, Binding, HAState, Router, Snapshot

AGENTS = (
    Agent(id="a1", host="net-1", availability_zone="az1"),
    Agent(id="a2", host="net-2", availability_zone="az2"),
    Agent(id="a3", host="net-3", availability_zone="az1"),
    Agent(id="dead", host="net-4", availability_zone="az2", alive=False),
    Agent(id="off", host="net-5", availability_zone="az2", admin_state_up=False),
)


def _audit(*bindings: Binding, ha: bool = True, replicas: int = 2) -> set[FindingKind]:
    snap = Snapshot(agents=AGENTS, routers=(Router(id="r", ha=ha),), bindings=bindings)
    return {f.kind for f in audit_ha_routers(snap, replicas=replicas)}


def test_healthy_router_in_two_azs_has_no_findings() -> None:
    assert _audit(Binding("r", "a1", HAState.ACTIVE), Binding("r", "a2", HAState.STANDBY)) == set()


def test_two_actives_is_split_brain() -> None:
    kinds = _audit(Binding("r", "a1", HAState.ACTIVE), Binding("r", "a2", HAState.ACTIVE))
    assert kinds == {FindingKind.SPLIT_BRAIN}


def test_no_active_replica() -> None:
    kinds = _audit(Binding("r", "a1", HAState.STANDBY), Binding("r", "a2", HAState.STANDBY))
    assert kinds == {FindingKind.NO_ACTIVE}


def test_every_replica_on_a_dead_agent_is_unknown() -> None:
    # Neutron reports the dead active replica as unknown, the dead standby stays standby.
    kinds = _audit(Binding("r", "dead", HAState.UNKNOWN), Binding("r", "off", HAState.STANDBY))
    assert kinds == {
        FindingKind.UNKNOWN,
        FindingKind.REPLICA_ON_DISABLED_AGENT,
        FindingKind.REPLICA_ON_DEAD_AGENT,
        FindingKind.TOO_FEW_REPLICAS,
    }


def test_replica_on_disabled_agent_loses_redundancy() -> None:
    kinds = _audit(Binding("r", "a1", HAState.ACTIVE), Binding("r", "off", HAState.STANDBY))
    assert kinds == {FindingKind.REPLICA_ON_DISABLED_AGENT, FindingKind.TOO_FEW_REPLICAS}


def test_replicas_crowded_in_one_az() -> None:
    kinds = _audit(Binding("r", "a1", HAState.ACTIVE), Binding("r", "a3", HAState.STANDBY))
    assert kinds == {FindingKind.AZ_CROWDED}


def test_wanted_replica_count_is_configurable() -> None:
    bindings = (Binding("r", "a1", HAState.ACTIVE), Binding("r", "a2", HAState.STANDBY))
    assert _audit(*bindings, replicas=3) == {FindingKind.TOO_FEW_REPLICAS}


def test_legacy_routers_are_not_audited() -> None:
    assert _audit(Binding("r", "a1"), ha=False) == set()


def test_worst_severity_is_the_check_exit_code() -> None:
    snap = Snapshot(
        agents=AGENTS,
        routers=(Router(id="r", ha=True), Router(id="s", ha=True)),
        bindings=(
            Binding("r", "a1", HAState.ACTIVE),
            Binding("r", "a3", HAState.STANDBY),
            Binding("s", "a1", HAState.ACTIVE),
            Binding("s", "a2", HAState.ACTIVE),
        ),
    )
    findings = audit_ha_routers(snap)
    assert worst_severity(findings) == Severity.CRITICAL
    assert worst_severity([f for f in findings if f.router_id == "r"]) == Severity.WARNING
    assert worst_severity([]) == Severity.OK


def test_unknown_replica_on_a_live_agent_is_reported() -> None:
    kinds = _audit(Binding("r", "a1", HAState.ACTIVE), Binding("r", "a2", HAState.UNKNOWN))
    assert kinds == {FindingKind.UNKNOWN}


def test_replicas_on_live_disabled_agents_are_not_called_unknown() -> None:
    kinds = _audit(Binding("r", "off", HAState.ACTIVE))
    assert kinds == {FindingKind.REPLICA_ON_DISABLED_AGENT, FindingKind.TOO_FEW_REPLICAS}
