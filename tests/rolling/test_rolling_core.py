"""The pure parts of rolling maintenance: the steps, the command line, the stability proof."""

from __future__ import annotations

import pytest

from l3ha.errors import BadInputError
from l3ha.health import HealthPolicy, HealthState, observe
from l3ha.model import Agent
from l3ha.operations.rolling import Phase, RollingRequest, StepKey, command_argv
from l3ha.operations.rolling.plan import all_steps
from l3ha.operations.rolling.stability import Proof, Stability, failure_reason

POLICY = HealthPolicy(agent_down_time=3.0, report_interval=1.0)  # missed after 2 s


def test_steps_drain_every_participant_before_the_command_and_restore_after() -> None:
    steps = all_steps(("n1", "n2"), ("l3", "dhcp"), with_command=True)
    first = [(s.phase.value, s.participant) for s in steps if s.host == "n1"]
    assert first == [
        ("drain", "l3"), ("drain", "dhcp"), ("run", ""), ("stable", "l3"), ("stable", "dhcp"),
        ("canary", "l3"), ("canary", "dhcp"), ("restore", "l3"), ("restore", "dhcp"),
    ]  # fmt: skip
    assert steps[len(first)] == StepKey("n2", Phase.DRAIN, "l3")
    assert Phase.RUN not in {s.phase for s in all_steps(("n1",), ("l3",), with_command=False)}


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
        RollingRequest(hosts=("n1",), command="  ")


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
