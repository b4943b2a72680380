"""The agents of a host a rolling run takes out of service and back. I/O: cloud, journal.

A *participant* is one kind of agent on a network node. The run drains every
participant of a host before the maintenance command and, after it, has each
one prove itself (``read_agent``: the heartbeat the stable step watches),
pass its canary and be restored; one that fails is kept drained. The run
knows nothing else about them: the DHCP agent (``dhcp_participant``) joins
by implementing ``Participant`` and being listed next to ``L3Participant``.
A participant absent from a host (``present``) has no steps there.

``L3Participant`` does all of it through the operations layer (drain,
migrate, undrain: every write through the executor, journalled, read back):
drain moves the legacy routers away and replaces the HA replicas, waiting for
the moved routers' ports to be ACTIVE, then disables the agent. The canary
enables the agent again (keeping l3ha's drain mark in its description),
migrates one router onto it and requires its ports ACTIVE within
``--canary-timeout`` (and, when the guard watches that router's address, an
answer from it); restore clears the mark.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from l3ha.errors import L3haError
from l3ha.executor import AgentChange, MoveOutcome
from l3ha.model import Agent, MoveKind, Snapshot
from l3ha.operations import (
    DRAIN_MARK,
    Action,
    ActionRequest,
    ActionResult,
    AgentChanged,
    OperationContext,
    make_plan,
    run_action,
)
from l3ha.operations.rolling.guard import TrafficGuard
from l3ha.operations.rolling.plan import RollingRequest

CANARY_MARK = f"{DRAIN_MARK} canary"
DATAPLANE_POLL = 0.1  # seconds between looks at the guard while the canary's address is awaited


@dataclass(frozen=True)
class StepResult:
    """How a step ended: ok, why not, and facts for the journal and the summary."""

    ok: bool
    reason: str = ""
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunContext:
    """What every step of a run works with."""

    ops: OperationContext
    request: RollingRequest
    guard: TrafficGuard | None = None


class Participant(Protocol):
    """One kind of agent the run drains and restores (see the module docstring)."""

    name: str
    unit: str  # what it moves, for the summary: "routers" or "networks"

    def present(self, run: RunContext, host: str) -> bool: ...

    def would_move(self, run: RunContext, host: str) -> int: ...

    def drain(self, run: RunContext, host: str) -> StepResult: ...

    def read_agent(self, run: RunContext, host: str) -> Agent: ...

    def canary(self, run: RunContext, host: str, drained: dict[str, Any]) -> StepResult: ...

    def restore(self, run: RunContext, host: str, drained: dict[str, Any]) -> StepResult: ...

    def keep_drained(self, run: RunContext, host: str) -> StepResult: ...


def moved_routers(result: ActionResult, source: str) -> list[str]:
    """Routers the action moved (or re-homed a replica of) off agent ``source``."""
    moved = {
        r.router_id
        for run in result.runs
        for r in run.results
        if r.move.source == source
        and r.move.kind in (MoveKind.MOVE, MoveKind.REMOVE_REPLICA)
        and r.outcome in (MoveOutcome.MOVED, MoveOutcome.PENDING)
    }
    return sorted(moved)


def _pending(result: ActionResult) -> list[str]:
    return sorted(
        {r.router_id for run in result.runs for r in run.with_outcome(MoveOutcome.PENDING)}
    )


def _problem(result: ActionResult) -> str:
    if result.problems:
        return "; ".join(result.problems)
    counts: dict[str, int] = {}
    for run in result.runs:
        for outcome, count in run.counts().items():
            counts[outcome] = counts.get(outcome, 0) + count
    bad = {k: v for k, v in counts.items() if v and k not in ("moved", "skipped", "planned")}
    failed = [s for s in result.steps if isinstance(s, AgentChanged) and s.exit_code]
    if failed:
        return f"agent change failed: {failed[0].result.detail}"
    return ", ".join(f"{v} {k}" for k, v in sorted(bad.items())) or f"exit {result.exit_code}"


class L3Participant:
    """The host's L3 agent (see the module docstring)."""

    name = "l3"
    unit = "routers"

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}  # host -> agent id, once looked up

    def _request(self, run: RunContext, action: Action, **changes: Any) -> ActionRequest:
        req = run.request
        base = ActionRequest(
            action=action,
            weights=req.weights,
            execution=req.execution,
            placement=req.placement,
            journal_args=(("rolling", "yes"),),
        )
        return replace(base, **changes)

    def _agent(self, run: RunContext, host: str) -> Agent:
        return run.ops.observe().find_agent(host)

    def present(self, run: RunContext, host: str) -> bool:
        return True  # the run's hosts are L3 agents' hosts (checked before it starts)

    def would_move(self, run: RunContext, host: str) -> int:
        snapshot = run.ops.observe()
        agent = snapshot.find_agent(host)
        plan = make_plan(self._request(run, Action.DRAIN, agent=host), snapshot)
        return len({m.router_id for m in plan.moves if m.source == agent.id})

    def read_agent(self, run: RunContext, host: str) -> Agent:
        if host not in self._ids:
            self._ids[host] = self._agent(run, host).id
        return run.ops.cloud.get_agent(self._ids[host])

    def drain(self, run: RunContext, host: str) -> StepResult:
        agent = self._agent(run, host)
        result = run_action(run.ops, self._request(run, Action.DRAIN, agent=host))
        moved = moved_routers(result, agent.id)
        detail = {"agent": agent.id, "started_at": agent.started_at, "moved_out": moved}
        if result.exit_code != 0:
            return StepResult(False, f"drain of {host} did not finish: {_problem(result)}", detail)
        pending = _pending(result)
        if pending:
            return StepResult(
                False,
                f"{len(pending)} router(s) moved off {host} have ports not ACTIVE yet: "
                f"{', '.join(pending[:5])}",
                {**detail, "pending": pending},
            )
        left = run.ops.cloud.routers_on_agent(agent.id)
        if left:
            return StepResult(
                False, f"{len(left)} router(s) still on {host} after the drain", detail
            )
        return StepResult(True, "", detail)

    def canary(self, run: RunContext, host: str, drained: dict[str, Any]) -> StepResult:
        snapshot = run.ops.observe()
        agent = snapshot.find_agent(host)
        router = pick_canary(snapshot, run.request.canary, list(drained.get("moved_out", [])))
        if router is None:
            return StepResult(False, f"no router can serve as the canary for {host}")
        enable = AgentChange(
            agent.id, host, "rolling: canary", admin_state_up=True, description=CANARY_MARK
        )
        enabled = run.ops.executor(run.request.execution).change_agent(enable, agent)
        if not enabled.ok:
            return StepResult(False, f"agent on {host} could not be enabled: {enabled.detail}")
        started = time.monotonic()
        timeout = run.request.canary_timeout
        execution = replace(run.request.execution, wait_ports=True, port_timeout=timeout)
        migrate = self._request(
            run,
            Action.MIGRATE,
            routers=(router,),
            execution=execution,
            placement=replace(run.request.placement, to=(agent.id,)),
        )
        detail: dict[str, Any] = {"router": router}
        try:
            result = run_action(run.ops, migrate)
        except L3haError as exc:
            return StepResult(
                False, f"canary router {router} could not move to {host}: {exc}", detail
            )
        if result.exit_code != 0 or _pending(result):
            why = "ports not ACTIVE" if _pending(result) else _problem(result)
            return StepResult(
                False, f"canary router {router} on {host}: {why} within {timeout:g} s", detail
            )
        hosts = {b.agent_id for b in run.ops.cloud.router_bindings(router)}
        if agent.id not in hosts:
            return StepResult(False, f"canary router {router} is not on {host}", detail)
        return self._canary_answers(run, host, router, started, detail)

    def _canary_answers(
        self, run: RunContext, host: str, router: str, since: float, detail: dict[str, Any]
    ) -> StepResult:
        """With the guard watching the canary's address: it must answer, within the timeout."""
        guard = run.guard
        if guard is None or guard.router_answered_since(router, since) is None:
            return StepResult(True, "", {**detail, "moved_back": 1})
        moved_at = time.monotonic()
        deadline = since + run.request.canary_timeout
        while not guard.router_answered_since(router, moved_at):
            if time.monotonic() > deadline:
                return StepResult(
                    False,
                    f"canary router {router} has ports ACTIVE on {host} but its data-plane "
                    f"address does not answer (the probe saw no reply within "
                    f"{run.request.canary_timeout:g} s): the host's data plane is broken",
                    {**detail, "dataplane": "no answer"},
                )
            time.sleep(DATAPLANE_POLL)
        return StepResult(True, "", {**detail, "dataplane": "answers", "moved_back": 1})

    def restore(self, run: RunContext, host: str, drained: dict[str, Any]) -> StepResult:
        result = run_action(run.ops, self._request(run, Action.UNDRAIN, agent=host))
        if result.exit_code != 0:
            return StepResult(False, f"undrain of {host} failed: {_problem(result)}")
        return StepResult(True)

    def keep_drained(self, run: RunContext, host: str) -> StepResult:
        """After a failure: anything on the agent (the canary) moves away, and it is
        disabled again (a drain; nothing moves when nothing is there)."""
        try:
            agent = self._agent(run, host)
            if not agent.admin_state_up and not run.ops.cloud.routers_on_agent(agent.id):
                return StepResult(True, "already drained")
            return self.drain(run, host)
        except L3haError as exc:
            return StepResult(False, f"could not keep {host} drained: {exc}")


def pick_canary(snapshot: Snapshot, named: str | None, drained: list[str]) -> str | None:
    """The canary router: the one named, else the first (by id) legacy router among
    those drained from the host, else the first hosted legacy router anywhere."""
    if named:
        return snapshot.find_router(named).id
    hosted = {b.router_id for b in snapshot.bindings}
    legacy = sorted(
        r.id for r in snapshot.routers if not r.ha and not r.distributed and r.id in hosted
    )
    from_host = [r for r in legacy if r in set(drained)]
    pool = from_host or legacy
    return pool[0] if pool else None
