"""Rolling maintenance, host by host: drain, upgrade, prove stable, canary, restore. I/O:
cloud, journals, a child process per host, the probe (all through the modules it calls),
and the operator's answer at a ``--pause`` (through ``ask_continue``).

``run_rolling`` takes the hosts one at a time, in the order given; for each
it drains every participant present on it (its L3 agent, its DHCP agent
when it has one), takes the upgrade step (runs the command; or waits until
the operator says continue, a stop there stopping the run with the host
drained; or, in a rehearsal, nothing), waits until every
participant's agent has been continuously alive for ``--stable-for``,
passes each one's canary, and only then restores it. Each step is recorded
in the rolling journal before it acts and after; ``--resume`` continues a
stopped or killed run from its first step not done (the moves a crash cut
short are finished first from the cloud's state, so none is made twice).
The run stops, keeping the host drained, when a step fails; before each new
host it stops when the probe has seen an outage longer than
``--max-outage``. ``--rebalance-after`` evens the load at the end. Dry run
records nothing and reports the steps with the drain each host would need
today.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from l3ha.errors import L3haError
from l3ha.health import HealthState, observe
from l3ha.operations import Action, ActionRequest, finish_interrupted, run_action
from l3ha.operations.rolling.command import group_alive, run_command
from l3ha.operations.rolling.participants import (
    ROLLING_JOURNAL_ARGS,
    Participant,
    RunContext,
    StepResult,
)
from l3ha.operations.rolling.plan import Phase, StepKey, command_argv, run_steps
from l3ha.operations.rolling.record import RollingRecord, RunStatus, StepRecord, StepStatus
from l3ha.operations.rolling.report import HostSummary, RollingReport
from l3ha.operations.rolling.stability import Proof, Stability, failure_reason

Say = Callable[[str], None]
#: Asked at a ``--pause`` step with the drained host: True to go on, False to stop there.
AskContinue = Callable[[str], bool]


def never_continue(host: str) -> bool:
    """The answer when nobody can be asked: stop, the host kept drained."""
    return False


@dataclass
class _Run:
    """One run in progress: its context, record and what it has learnt."""

    ctx: RunContext
    record: RollingRecord
    run_id: int
    participants: dict[str, Participant]
    say: Say
    on_output: Say
    ask_continue: AskContinue
    summaries: dict[str, HostSummary]
    steps: list[StepRecord]


def run_rolling(
    ctx: RunContext,
    record: RollingRecord | None,
    participants: list[Participant],
    *,
    say: Say,
    on_output: Say,
    ask_continue: AskContinue = never_continue,
    resume_run: int | None = None,
    request_doc: dict[str, Any] | None = None,
) -> RollingReport:
    """Run (or resume) the rolling maintenance (see the module docstring)."""
    request = ctx.request
    if request.dry_run or record is None:
        return _dry_run(ctx, participants)
    if resume_run is None:
        run_id = record.begin_run(request_doc or {}, _steps(ctx, participants))
    else:
        run_id = resume_run
        record.claim_run(run_id)
    ok, _ = finish_interrupted(ctx.ops, dry_run=False)  # moves a crash cut short
    if not ok:
        say("warning: finishing interrupted moves left a router unhosted; see 'l3ha history'")
    run = _Run(
        ctx,
        record,
        run_id,
        {p.name: p for p in participants},
        say,
        on_output,
        ask_continue,
        {h: HostSummary(h) for h in request.hosts},
        record.steps(run_id),
    )
    _restore_summaries(run)
    report = RollingReport(run_id, list(run.summaries.values()), probed=ctx.guard is not None)
    stopped = _run_steps(run)
    if not stopped and request.rebalance_after:
        _rebalance(run, report)
    report.stopped = stopped
    report.steps = [(s.key, s.status.value) for s in record.steps(run_id)]
    if ctx.guard is not None:
        report.longest_outage_s, report.longest_outage_target = ctx.guard.longest()
    record.finish_run(run_id, RunStatus.STOPPED if stopped else RunStatus.DONE, stopped)
    return report


def _steps(ctx: RunContext, participants: list[Participant]) -> list[StepKey]:
    """Every step of the run: per host, the participants present on it."""
    present = [
        (host, tuple(p.name for p in participants if p.side.present(ctx, host)))
        for host in ctx.request.hosts
    ]
    return run_steps(present, ctx.request.upgrade)


def _run_steps(run: _Run) -> str:
    """Every step not yet done, in order; the reason the run stopped ('' when it did not)."""
    hosts = list(run.ctx.request.hosts)
    previous_host = ""
    for step in run.steps:
        if step.status is StepStatus.DONE:
            continue
        key = step.key
        if key.host != previous_host:
            gate = _outage_gate(run, key.host)
            if gate:
                return gate
            previous_host = key.host
        number = hosts.index(key.host) + 1
        run.say(f"[host {number}/{len(hosts)} {key.host}] {key.label}")
        try:
            result = _execute(run, step)
        except L3haError as exc:  # a refusal (a safety gate, an unknown host): the step failed
            result = StepResult(False, str(exc))
        _account(run, key, result)
        detail = {**result.detail, "reason": result.reason}
        run.record.finish_step(run.run_id, step.seq, result.ok, detail)
        if not result.ok:
            return _stop(run, key, result.reason)
    return ""


def _execute(run: _Run, step: StepRecord) -> StepResult:
    key = step.key
    run.record.start_step(run.run_id, step.seq)
    summary = run.summaries[key.host]
    if summary.started is None:
        summary.started = time.monotonic()
    summary.status = "in progress"
    if run.ctx.guard is not None:
        run.ctx.guard.mark(f"{key.host}: {key.label}")
    if key.phase is Phase.RUN:
        return _run_command(run, step)
    if key.phase is Phase.PAUSE:
        return _pause(run, key.host)
    participant = run.participants[key.participant]
    if key.phase is Phase.DRAIN:
        return participant.drain(run.ctx, key.host)
    drained = _detail(run, StepKey(key.host, Phase.DRAIN, key.participant))
    if key.phase is Phase.STABLE:
        return _prove_stable(run, participant, key.host, drained.get("started_at"))
    if key.phase is Phase.CANARY:
        return participant.canary(run.ctx, key.host, drained)
    return participant.restore(run.ctx, key.host, drained)


def _detail(run: _Run, key: StepKey) -> dict[str, Any]:
    for step in run.record.steps(run.run_id):
        if step.key == key:
            return step.detail
    return {}


def _run_command(run: _Run, step: StepRecord) -> StepResult:
    request = run.ctx.request
    assert request.command is not None
    argv = command_argv(request.command, step.key.host, request.shell)
    earlier = step.detail.get("pgid")
    if isinstance(earlier, int) and group_alive(earlier):
        return StepResult(
            False,
            f"the command a killed run started on {step.key.host} (process group {earlier}) "
            "is still running; let it end, then resume",
            {"pgid": earlier},
        )
    run.record.mark_output(run.run_id, step.seq, f"attempt {step.attempts + 1}: {argv}")

    def line(text: str) -> None:
        run.on_output(f"{step.key.host}| {text}")
        run.record.append_output(run.run_id, step.seq, text)

    def started(pid: int) -> None:
        run.record.note_detail(run.run_id, step.seq, {"pgid": pid})

    result = run_command(argv, line, request.run_timeout, time.monotonic, started)
    run.record.mark_output(run.run_id, step.seq, f"exit {result.exit_code}")
    detail = {"exit_code": result.exit_code, "seconds": round(result.seconds, 3)}
    if not result.ok:
        return StepResult(False, f"the command on {step.key.host} {result.problem}", detail)
    return StepResult(True, "", detail)


def _pause(run: _Run, host: str) -> StepResult:
    """``--pause``: the host is drained; go on once the operator says so."""
    if run.ask_continue(host):
        return StepResult(True, "", {"continued": True})
    return StepResult(False, f"the operator stopped the run with {host} drained")


def _prove_stable(
    run: _Run, participant: Participant, host: str, started_before: str | None
) -> StepResult:
    """Watch the agent's heartbeat until it has been alive for ``--stable-for``."""
    request = run.ctx.request
    policy = request.health
    started = time.monotonic()
    deadline = started + request.stable_deadline
    health = HealthState()
    proof = Stability(baseline_started_at=started_before)
    agent_id = ""
    while True:
        agent = participant.read_agent(run.ctx, host)
        agent_id, now = agent.id, time.monotonic()
        health = observe(health, [agent], now, policy)
        proof = proof.fold(health.tracks[agent_id], now, policy)
        if proof.proof(now, request.stable_for) is Proof.STABLE:
            detail = {"restarted": proof.restarted, "waited_s": round(now - started, 1)}
            return StepResult(True, "", detail)
        if now >= deadline:
            reason = failure_reason(proof, host, now, now - started, request.stable_for)
            return StepResult(False, reason, {"restarted": proof.restarted})
        time.sleep(min(request.poll_interval, max(0.0, deadline - now)))


def _stop(run: _Run, key: StepKey, reason: str) -> str:
    """A step failed: keep the host's participants drained, say why."""
    run.say(f"[{key.host}] {key.label} failed: {reason}")
    run.summaries[key.host].status = f"stopped at {key.label}"
    if key.phase is not Phase.DRAIN:  # a drain that failed left its agent enabled, as drain does
        names = {s.key.participant for s in run.steps if s.key.host == key.host}
        for participant in (p for p in run.participants.values() if p.name in names):
            kept = participant.keep_drained(run.ctx, key.host)
            if kept.ok:
                run.say(f"[{key.host}] {participant.name} agent kept drained")
            else:
                run.say(f"[{key.host}] warning: {kept.reason}")
    return f"{key.host}: {key.label}: {reason}"


def _outage_gate(run: _Run, next_host: str) -> str:
    """Before a new host: stop when the probe saw an outage longer than ``--max-outage``."""
    guard, limit = run.ctx.guard, run.ctx.request.max_outage
    if guard is not None and guard.error is not None:
        return f"the probe stopped working ({guard.error}): not starting {next_host}"
    if guard is None or limit is None:
        return ""
    seconds, target = guard.longest()
    if seconds <= limit:
        return ""
    reason = (
        f"the probe saw {target} down for {seconds:.1f} s, longer than --max-outage "
        f"{limit:g} s: not starting {next_host}"
    )
    run.say(reason)
    return reason


def _account(run: _Run, key: StepKey, result: StepResult) -> None:
    summary = run.summaries[key.host]
    if result.ok or key.phase is Phase.DRAIN:
        _count(run, summary, key, result.detail)
    if summary.started is not None:
        summary.seconds = time.monotonic() - summary.started
        if run.ctx.guard is not None:
            summary.longest_outage_s = run.ctx.guard.longest(summary.started)[0]
    last = key.phase is Phase.RESTORE and key == _last_key(run, key.host)
    if result.ok and last:
        summary.status = "done"


def _last_key(run: _Run, host: str) -> StepKey:
    return [s.key for s in run.steps if s.key.host == host][-1]


def _restore_summaries(run: _Run) -> None:
    """On resume: what the finished steps of earlier attempts did."""
    for step in run.steps:
        summary = run.summaries[step.key.host]
        if step.status is not StepStatus.DONE:
            continue
        summary.status = "in progress"
        _count(run, summary, step.key, step.detail)
        if step.key == _last_key(run, step.key.host):
            summary.status = "done"


def _count(run: _Run, summary: HostSummary, key: StepKey, detail: dict[str, Any]) -> None:
    """What a step moved off the host (a drain) or back onto it, in its participant's unit."""
    participant = run.participants.get(key.participant)
    if participant is None:
        return
    out = len(detail.get("moved_out", [])) if key.phase is Phase.DRAIN else 0
    summary.count(participant.unit, out, int(detail.get("moved_back", 0)))


def _rebalance(run: _Run, report: RollingReport) -> None:
    """Even the load with minimal moves; credit each move to the hosts it moved onto and off."""
    run.say("rebalancing")
    request = run.ctx.request
    rebalance = ActionRequest(
        action=Action.REBALANCE,
        weights=request.weights,
        execution=request.execution,
        placement=replace(request.placement, to=()),
        journal_args=ROLLING_JOURNAL_ARGS,
    )
    result = run_action(run.ctx.ops, rebalance)
    hosts = {a.id: a.host for a in run.ctx.ops.observe().agents}
    for each in result.runs:
        for moved in each.results:
            if moved.outcome.value not in ("moved", "pending"):
                continue
            report.rebalance_moves += 1
            _credit(run, report, hosts.get(moved.target or ""), +1)
            _credit(run, report, hosts.get(moved.move.source or ""), -1)
    if result.exit_code:
        run.say(f"warning: the rebalance did not finish cleanly (exit {result.exit_code})")


def _credit(run: _Run, report: RollingReport, host: str | None, sign: int) -> None:
    """One rebalance move onto (+1) or off (-1) ``host``."""
    if host is None:
        return
    summary = run.summaries.get(host)
    if summary is None:
        report.rebalanced_elsewhere[host] = report.rebalanced_elsewhere.get(host, 0) + sign
    elif sign > 0:
        summary.rebalanced_in += 1
    else:
        summary.rebalanced_out += 1


def _dry_run(ctx: RunContext, participants: list[Participant]) -> RollingReport:
    """The steps, and what each host's drain would move on today's cloud."""
    keys = _steps(ctx, participants)
    summaries = []
    for host in ctx.request.hosts:
        summary = HostSummary(host, status="planned")
        for participant in participants:
            if any(k.host == host and k.participant == participant.name for k in keys):
                summary.count(participant.unit, participant.side.would_move(ctx, host))
        summaries.append(summary)
    return RollingReport(None, summaries, [(k, "planned") for k in keys])
