"""The pure parts of rolling maintenance: the steps, the command line, the stability proof."""

from __future__ import annotations

import pytest

from l3ha.errors import BadInputError
from l3ha.health import HealthPolicy, HealthState, observe
from l3ha.model import Agent
from l3ha.operations.rolling import (
    HostSummary,
    Phase,
    RollingReport,
    RollingRequest,
    StepKey,
    UpgradeStep,
    command_argv,
)
from l3ha.operations.rolling.plan import run_steps
from l3ha.operations.rolling.report import closing_lines, document, rows
from l3ha.operations.rolling.session import RunShape, resume_shape
from l3ha.operations.rolling.stability import Proof, Stability, failure_reason

POLICY = HealthPolicy(agent_down_time=3.0, report_interval=1.0)  # missed after 2 s


def test_steps_drain_every_participant_before_the_command_and_restore_after() -> None:
    steps = run_steps([("n1", ("l3", "dhcp")), ("n2", ("l3",))], UpgradeStep.RUN)
    first = [(s.phase.value, s.participant) for s in steps if s.host == "n1"]
    assert first == [
        ("drain", "l3"), ("drain", "dhcp"), ("run", ""), ("stable", "l3"), ("stable", "dhcp"),
        ("canary", "l3"), ("canary", "dhcp"), ("restore", "l3"), ("restore", "dhcp"),
    ]  # fmt: skip
    assert steps[len(first)] == StepKey("n2", Phase.DRAIN, "l3")
    assert {s.participant for s in steps if s.host == "n2"} == {"l3", ""}


def test_the_upgrade_step_is_a_command_a_pause_or_nothing() -> None:
    def phases(upgrade: UpgradeStep) -> list[str]:
        return [s.label for s in run_steps([("n1", ("l3",))], upgrade)]

    assert phases(UpgradeStep.PAUSE) == [
        "drain l3",
        "pause",
        "stable l3",
        "canary l3",
        "restore l3",
    ]
    assert phases(UpgradeStep.REHEARSAL) == ["drain l3", "stable l3", "canary l3", "restore l3"]
    with pytest.raises(BadInputError, match="a command goes with --run"):
        RollingRequest(hosts=("n1",), upgrade=UpgradeStep.PAUSE, command="upgrade {host}")
    with pytest.raises(BadInputError, match="a command goes with --run"):
        RollingRequest(hosts=("n1",), upgrade=UpgradeStep.RUN)


def test_a_new_run_names_its_upgrade_step_and_a_resume_keeps_the_stored_one() -> None:
    with pytest.raises(BadInputError, match="--run COMMAND, --pause or --no-run"):
        resume_shape(None, RunShape(("n1",), None))
    stored = RunShape(("n1", "n2"), UpgradeStep.PAUSE).document()
    assert resume_shape(stored, RunShape((), None)) == RunShape(("n1", "n2"), UpgradeStep.PAUSE)
    with pytest.raises(BadInputError, match="started with --pause, not --no-run"):
        resume_shape(stored, RunShape((), UpgradeStep.REHEARSAL))
    older = {"hosts": ["n1"], "command": "up {host}", "shell": False}  # before "mode" was kept
    assert resume_shape(older, RunShape((), None)).upgrade is UpgradeStep.RUN
    assert resume_shape({"hosts": ["n1"]}, RunShape((), None)).upgrade is UpgradeStep.REHEARSAL


def _report(probed: bool, rebalanced: bool) -> RollingReport:
    host = HostSummary("n1", moved_out=3, moved_back=3, seconds=12.0, status="done")
    other = HostSummary("n2", moved_out=2, moved_back=2, seconds=9.0, status="done")
    if probed:
        host.longest_outage_s, other.longest_outage_s = 0.4, 0.0
    report = RollingReport(1, [host, other], [(StepKey("n1", Phase.DRAIN, "l3"), "done")])
    report.probed = probed
    if probed:
        report.longest_outage_s, report.longest_outage_target = 0.4, "tcp router-r1"
    if rebalanced:
        other.rebalanced_in, host.rebalanced_out = 2, 1
        report.rebalance_moves, report.rebalanced_elsewhere = 3, {"n3": -1}
    return report


def test_an_outage_no_probe_measured_is_na_never_zero() -> None:
    report = _report(probed=False, rebalanced=False)
    assert [r["longest_outage_s"] for r in rows(report, table=True)] == ["n/a", "n/a"]
    assert document(report)["longest_outage_s"] is None
    assert [h["longest_outage_s"] for h in document(report)["hosts"]] == [None, None]
    assert "longest outage: n/a (no probe ran)" in closing_lines(report)
    probed = _report(probed=True, rebalanced=False)
    assert [r["longest_outage_s"] for r in rows(probed, table=True)] == [0.4, 0.0]
    assert "longest outage: 0.40 s (tcp router-r1)" in closing_lines(probed)


def test_a_final_rebalance_is_credited_to_the_hosts_it_moved() -> None:
    report = _report(probed=True, rebalanced=True)
    table = {r["host"]: r for r in rows(report, table=True)}
    assert (table["n1"]["rebalanced_in"], table["n1"]["rebalanced_out"]) == (0, 1)
    assert (table["n2"]["rebalanced_in"], table["n2"]["rebalanced_out"]) == (2, 0)
    assert table["n1"]["moved_back"] == 3  # the restore's own count, not the rebalance's
    assert "rebalance: 3 move(s) (hosts outside the run: n3 -1)" in closing_lines(report)
    assert "rebalanced_in" not in rows(_report(probed=True, rebalanced=False), table=True)[0]


def test_the_host_is_substituted_after_splitting_and_never_through_a_shell() -> None:
    argv = command_argv(
        "ssh {host} 'apt-get install -y neutron-l3-agent' --tag={host}", "n 1", False
    )
    assert argv == ["ssh", "n 1", "apt-get install -y neutron-l3-agent", "--tag=n 1"]
    assert command_argv("echo {host}; id", "x;y", True) == ["/bin/sh", "-c", "echo 'x;y'; id"]
    with pytest.raises(BadInputError, match="cannot be split"):
        command_argv("ssh 'unterminated", "n1", False)


def test_bad_requests_are_refused() -> None:
    with pytest.raises(BadInputError, match="no host"):
        RollingRequest(hosts=())
    with pytest.raises(BadInputError, match="more than once"):
        RollingRequest(hosts=("n1", "n2", "n1"))
    with pytest.raises(BadInputError, match="stable-for"):
        RollingRequest(hosts=("n1",), stable_for=0)
    with pytest.raises(BadInputError, match="is empty"):
        RollingRequest(hosts=("n1",), upgrade=UpgradeStep.RUN, command="  ")


def _agent(heartbeat: int, started: str = "s0") -> Agent:
    return Agent("a1", "n1", heartbeat_timestamp=f"hb{heartbeat}", started_at=started)


def _watch(readings: list[tuple[float, int, str]]) -> tuple[Stability, float]:
    """Fold (monotonic time, heartbeat number, started_at) readings; the proof and last time."""
    health, proof, now = HealthState(), Stability(baseline_started_at="s0"), 0.0
    for now, beat, started in readings:
        health = observe(health, [_agent(beat, started)], now, POLICY)
        proof = proof.fold(health.tracks["a1"], now, POLICY)
    return proof, now


def test_a_restarted_agent_heartbeating_for_stable_for_is_stable() -> None:
    proof, now = _watch([(t * 0.5, int(t * 0.5), "s1") for t in range(12)])
    assert proof.restarted is True
    assert proof.proof(now, stable_for=4.0) is Proof.STABLE
    assert proof.proof(now, stable_for=6.0) is Proof.PROVING


def test_an_agent_whose_heartbeat_never_changes_stays_silent() -> None:
    proof, now = _watch([(t * 0.5, 0, "s0") for t in range(40)])
    assert proof.proof(now, stable_for=1.0) is Proof.SILENT
    reason = failure_reason(proof, "n1", now, now, 1.0)
    assert "has not reported since the command ended" in reason


def test_a_missed_heartbeat_starts_the_proof_again() -> None:
    beats = [(0.0, 0), (1.0, 1), (2.0, 2), (3.0, 3)]  # alive from 1.0 ...
    beats += [(4.0, 3), (5.0, 3), (5.5, 3)]  # ... silent for 2.5 s: a missed heartbeat
    beats += [(6.0, 4), (7.0, 5), (8.0, 6)]  # back
    proof, now = _watch([(t, b, "s0") for t, b in beats])
    assert proof.missed == 1 and proof.restarted is False
    assert proof.alive_for(now) == pytest.approx(2.0)
    assert proof.proof(now, stable_for=3.0) is Proof.PROVING
    assert proof.proof(now, stable_for=2.0) is Proof.STABLE
