"""The router actions: gate, plan, execute, verify. I/O: cloud, journal (via the context).

``run_action(ctx, request)`` runs ``evacuate``, ``drain``, ``undrain``,
``migrate``, ``rebalance``, ``repair`` and ``ha-repair``; the command line, the
watch daemon and rolling maintenance all call it, so an action behaves the same
whoever asks. The planned actions and a drain's first pass
run through the flow every kind shares (``l3ha.operations.flow``), the rest of a
drain through ``l3ha.operations.drain``. Every write goes through the executor
(router moves and agent changes alike), so dry run, the journal and
read-back cover all of it. Gates raise ``SafetyHaltError`` before anything
is written; notices for the operator go to ``ctx.notify``.
"""

from __future__ import annotations

from collections.abc import Sized
from dataclasses import dataclass, field, replace

from l3ha.errors import NotFoundError, SafetyHaltError
from l3ha.executor import (
    AgentChange,
    AgentChangeOutcome,
    AgentChangeResult,
    MoveOutcome,
    snapshot_candidates,
)
from l3ha.executor.outcome import BAD_OUTCOMES, UNPLACED
from l3ha.journal import OperationRecord
from l3ha.journal.history import recorded_names
from l3ha.model import Agent, MoveKind, Plan, Snapshot
from l3ha.operations.context import (
    OperationContext,
    agent_of_another_kind,
    operation_args,
    still_on_source,
    undrain_change,
)
from l3ha.operations.drain import DrainWords, run_drain
from l3ha.operations.flow import run_flow
from l3ha.operations.interrupted import finish_interrupted
from l3ha.operations.planning import make_plan, resolve_placement, within_budget
from l3ha.operations.request import (
    Action,
    ActionRequest,
    ActionResult,
    AgentChanged,
    Executed,
    Step,
)
from l3ha.weights import weight_warnings

#: The outcomes (and count) that keep a drain from disabling its agent.
_NOT_DONE = frozenset({*(o.value for o in BAD_OUTCOMES), UNPLACED})
#: Actions that first finish what a crash interrupted (from the journal).
FINISHES_INTERRUPTED = frozenset({Action.EVACUATE, Action.MIGRATE, Action.REBALANCE, Action.REPAIR})
#: Actions that plan on the routers' HA states.
_WITH_HA_STATE = frozenset({Action.REPAIR, Action.HA_REPAIR})


def run_action(ctx: OperationContext, request: ActionRequest) -> ActionResult:
    """Run the request's action (see the module docstring)."""
    try:
        return _run(ctx, request)
    except NotFoundError as exc:  # perhaps the agent is of another kind: say which
        raise agent_of_another_kind(ctx, request.agent, request.action.value) or exc from exc


def _run(ctx: OperationContext, request: ActionRequest) -> ActionResult:
    """Undrain enables the agent; drain moves routers off a live agent, then disables it
    (a disabled agent tears its routers down, so it is disabled only once none is left),
    then sweeps up late arrivals (``l3ha.operations.drain``); the rest plan and run
    through the flow every kind shares: evacuate (every router, or the named ones, off
    a dead agent; verified: none left there), migrate (the named routers to the best
    targets, or ``placement.to``), rebalance (even out routers over every live agent
    with the fewest moves), ha-repair (replace HA replicas on dead or disabled agents;
    the active one is never moved) and repair (finish interrupted work, bind unhosted
    routers, replace dead HA replicas; then run again the evacuations and drains a
    crash cut short)."""
    if request.action is Action.UNDRAIN:
        return undrain(ctx, request)
    side = _Routers(ctx, request)
    if request.action is Action.DRAIN:
        agent = request.agent or ""
        done = run_drain(side, side.plan_on, ctx.notify, agent, dry_run=request.dry_run)
        return ActionResult(request.action, tuple(done.steps), problems=done.problems)
    step, problems, ok = run_flow(side, side.plan_on, side.verify, dry_run=request.dry_run)
    code = 0
    if request.action is Action.REPAIR:
        code = _finish_interrupted_plans(ctx, request, side.interrupted)
    return ActionResult(request.action, (step,), problems, recovered_ok=ok, follow_up_code=code)


def resume(ctx: OperationContext, request: ActionRequest) -> ActionResult:
    """Only finish what a crash or a stop interrupted: recover its moves from the cloud's
    state, then run again the evacuations and drains it had not finished. (A daemon
    taking over calls this; ``repair`` does the same and repairs the rest.)"""
    ok, interrupted = finish_interrupted(ctx, request.dry_run)
    code = _finish_interrupted_plans(ctx, request, interrupted)
    return ActionResult(request.action, recovered_ok=ok, follow_up_code=code)


@dataclass
class _Routers:
    """The router side of the flow (``l3ha.operations.flow``) and of the drain flow."""

    ctx: OperationContext
    request: ActionRequest
    interrupted: list[OperationRecord] = field(default_factory=list)
    #: How the router drain names its agent and routers (``l3ha.operations.drain``).
    words = DrainWords(
        "agent",
        "router",
        arrived="{count} router(s) arrived on {host} while it drained; moving them",
        landed="{count} router(s) landed meanwhile; moving them",
        disabled="drain: no router left on the agent",
    )

    def recover(self) -> bool:
        """Finish what a crash interrupted (the actions that do); keep the operations whose
        evacuations and drains are to run again."""
        if self.request.action not in FINISHES_INTERRUPTED:
            return True
        ok, self.interrupted = finish_interrupted(self.ctx, self.request.dry_run)
        return ok

    def observe(self) -> Snapshot:
        return self.ctx.observe(with_ha_state=self.request.action in _WITH_HA_STATE)

    def plan_on(self, snapshot: Snapshot) -> Plan:
        for warning in weight_warnings(self.request.weights, snapshot.routers):
            self.ctx.notify(f"warning: {warning}")
        if self.request.action is Action.DRAIN:  # its agent named first, as it always was
            snapshot.find_agent(self.request.agent or "")
        return make_plan(self.request, snapshot)

    def execute(self, snapshot: Snapshot, plan: Plan) -> Executed:
        """Hand the plan (within the move budget) to the executor (a dry run reports it)."""
        ctx, request = self.ctx, self.request
        plan = within_budget(plan, request.move_budget)
        moved = (m.router_id for m in plan.moves)
        names = recorded_names(snapshot.agents, snapshot.routers_by_id, moved)
        # the agents routers may go to (``--to``, the daemon's live agents); None: any
        allowed = resolve_placement(request.placement, snapshot).allowed_targets
        run = ctx.executor(request.execution).run(
            plan,
            request.action.value,
            fallback_targets=snapshot_candidates(snapshot, allowed),
            progress=ctx.progress,
            args=operation_args(request, names),
            require_dead_source=False if request.force else None,
            should_stop=ctx.should_stop,
            routers=snapshot.routers_by_id,
        )
        if plan.unplaceable and not request.dry_run:
            ctx.notify(f"{len(plan.unplaceable)} router(s) could not be placed and were not moved")
        return Executed(plan, snapshot, run)

    def verify(self, step: Executed) -> tuple[str, ...]:
        """An evacuation's: no router reported moved off the source is still on it."""
        if self.request.action is not Action.EVACUATE:
            return ()
        source = step.snapshot.find_agent(self.request.agent or "")
        moved = {
            r.router_id
            for r in step.run.results
            if r.move.source == source.id
            and r.move.kind in (MoveKind.MOVE, MoveKind.REMOVE_REPLICA)
            and r.outcome in (MoveOutcome.MOVED, MoveOutcome.PENDING)
        }
        if not moved:
            return ()
        now_on = (b.router_id for b in self.ctx.cloud.routers_on_agent(source.id))
        still = still_on_source(self.ctx.notify, "router", moved, now_on, source.host)
        if not still:
            return ()
        return (f"{len(still)} router(s) still on {source.host} after the evacuation",)

    def on_agent(self, snapshot: Snapshot, agent_id: str) -> Sized:
        return snapshot.bindings_of_agent(agent_id)

    def left_on(self, agent: Agent) -> Sized:
        return self.ctx.cloud.routers_on_agent(agent.id)

    def drain_pass(self, snapshot: Snapshot) -> Executed:
        return self.execute(snapshot, make_plan(self.request, snapshot))

    def change_agent(self, change: AgentChange, agent: Agent) -> AgentChangeResult:
        executor = self.ctx.executor(self.request.execution)
        return executor.change_agent(change, None if self.request.dry_run else agent)

    def stranded(self, step: Executed) -> int | None:
        return len(step.plan.unplaceable) if step.exit_code != 0 else None

    def unfinished(self, last: Executed, agent: Agent, left: Sized) -> tuple[str, ...]:
        if last.exit_code == 0 and not left:
            return ()
        self.ctx.notify(
            f"agent {agent.host} left enabled: {len(left)} router(s) still on it "
            "(a disabled agent tears its routers down); fix the cause and drain again"
        )
        why = f"agent left enabled: {len(left)} router(s) still on it"
        bad = {k: v for k, v in last.run.counts().items() if v and k in _NOT_DONE}
        if bad:
            why += " after " + ", ".join(f"{v} {k}" for k, v in bad.items())
        return (why,)


def undrain(ctx: OperationContext, request: ActionRequest) -> ActionResult:
    """Enable an agent again (clearing l3ha's drain mark); with ``rebalance_after``, refill it."""
    snapshot = ctx.observe()
    agent = snapshot.find_agent(request.agent or "")
    change = undrain_change(agent, "undrain: back in service")
    enabled = ctx.executor(request.execution).change_agent(change, agent)
    steps: list[Step] = [AgentChanged(enabled)]
    if not enabled.ok:
        ctx.notify(f"agent {agent.host} could not be enabled: {enabled.detail}")
        return ActionResult(request.action, tuple(steps))
    if enabled.outcome is AgentChangeOutcome.UNCHANGED:
        ctx.notify(f"agent {agent.host} is not drained (enabled, no drain mark): nothing to undo")
    elif not request.dry_run:
        ctx.notify(f"agent {agent.host} enabled")
    if not request.rebalance_after:
        return ActionResult(request.action, tuple(steps))
    again = replace(request, action=Action.REBALANCE)
    if request.dry_run:  # plan as if the agent were already enabled
        enabled_agent = replace(agent, admin_state_up=True)
        agents = tuple(enabled_agent if a.id == agent.id else a for a in snapshot.agents)
        world = replace(snapshot, agents=agents)
        steps.append(_Routers(ctx, again).execute(world, make_plan(again, world)))
        return ActionResult(request.action, tuple(steps))
    refill = _run(ctx, again)
    return ActionResult(
        request.action,
        (*steps, *refill.steps),
        refill.problems,
        refill.recovered_ok,
        refill.follow_up_code,
    )


def _finish_interrupted_plans(
    ctx: OperationContext, request: ActionRequest, interrupted: list[OperationRecord]
) -> int:
    """Run again the evacuations and drains a crash cut short, on today's cloud."""
    code = 0
    for op in interrupted:
        agent_ref = op.args.get("agent")
        if op.kind not in ("evacuate", "drain") or not isinstance(agent_ref, str):
            continue
        source = ctx.observe().find_agent(agent_ref)
        if op.kind == "evacuate" and source.usable:
            ctx.notify(
                f"agent {source.host} is alive again: its interrupted evacuation is not resumed"
            )
            continue
        ctx.notify(f"finishing the {op.kind} of {agent_ref} that operation {op.id} began")
        again = replace(
            request,
            action=Action(op.kind),
            agent=agent_ref,
            routers=(),
            skip_unknown=False,
            force=False,
            placement=replace(request.placement, to=()),
            max_moves=None,
        )
        try:
            step = run_action(ctx, again).exit_code
        except SafetyHaltError as exc:
            ctx.notify(f"not finishing the {op.kind} of {agent_ref}: {exc}")
            step = exc.exit_code
        code = max(code, step)
    return code
