"""The DHCP actions: evacuate, drain, undrain, repair, return. I/O: cloud, journal (via context).

``run_dhcp_action(ctx, request)`` runs one action as every router action
runs: finish interrupted DHCP operations (from the cloud's state), observe,
gate (the fleet gate over the DHCP agents: many dead at once means the
message bus, not the agents), plan (``l3ha.planner.dhcp``), execute (every
write through ``l3ha.executor.dhcp``; dry run there), verify (nothing
reported moved is still on the source, and no network that had DHCP lost
it). The command line, the watch daemon and ``l3ha rolling`` (which returns
a restored host's networks to it) call this. Gates raise
``SafetyHaltError`` (exit 3), bad references ``NotFoundError`` /
``AmbiguousError`` (exit 2), before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Sized
from dataclasses import dataclass, replace

from l3ha.clock import Clock
from l3ha.cloud.dhcp_base import DhcpCloud
from l3ha.dhcp_model import DhcpMove, DhcpPlan, DhcpSnapshot, usable
from l3ha.errors import SafetyHaltError
from l3ha.executor import AgentChange, AgentChangeOutcome, AgentChangeResult
from l3ha.executor.dhcp import DhcpExecutor, DhcpOutcome, DhcpRunResult
from l3ha.executor.dhcp_steps import change_dhcp_agent, recover_dhcp
from l3ha.journal import Journal
from l3ha.model import Agent
from l3ha.operations.context import (
    Notify,
    drain_change,
    log_notice,
    operation_args,
    still_on_source,
    undrain_change,
)
from l3ha.operations.drain import finish_drain
from l3ha.operations.planning import cut_to_budget, refuse_when_fleet_down
from l3ha.operations.request import (
    AgentChanged,
    DhcpAction,
    DhcpRequest,
    OperationResult,
    PlanExecuted,
)
from l3ha.planner.dhcp import (
    DhcpPolicy,
    plan_dhcp_drain,
    plan_dhcp_evacuate,
    plan_dhcp_repair,
    plan_dhcp_return,
)


@dataclass
class DhcpContext:
    """The handles a DHCP action uses; ``observer`` replaces the fresh read (the daemon)."""

    cloud: DhcpCloud
    journal: Journal | None
    clock: Clock
    notify: Notify = log_notice
    observer: Callable[[], DhcpSnapshot] | None = None
    should_stop: Callable[[], bool] | None = None

    def observe(self) -> DhcpSnapshot:
        return self.observer() if self.observer is not None else self.cloud.read_dhcp_snapshot()


class DhcpExecuted(PlanExecuted[DhcpPlan, DhcpSnapshot, DhcpRunResult]):
    """A DHCP plan and its run."""


class DhcpResult(OperationResult[DhcpAction, DhcpExecuted]):
    """What one DHCP action did, in order, and its exit code (0 done, 1 not)."""


def run_dhcp_action(ctx: DhcpContext, request: DhcpRequest) -> DhcpResult:
    """Run the request's action (see the module docstring)."""
    handlers = {
        DhcpAction.EVACUATE: evacuate,
        DhcpAction.DRAIN: drain,
        DhcpAction.UNDRAIN: undrain,
        DhcpAction.REPAIR: repair,
        DhcpAction.RETURN: return_networks,
    }
    return handlers[request.action](ctx, request)


def evacuate(ctx: DhcpContext, request: DhcpRequest) -> DhcpResult:
    """Every network off a dead (or disabled) DHCP agent, make before break."""
    _finish_interrupted(ctx, request)
    snapshot = ctx.observe()
    source = snapshot.find_agent(request.agent or "")
    policy = _policy(request, snapshot)
    _gate_fleet(request, snapshot, "evacuate")
    if usable(source) and not request.force:
        raise SafetyHaltError(
            f"DHCP agent {source.host} is alive and enabled: use 'l3ha dhcp drain "
            f"{source.host}' to move its networks away (or dhcp evacuate --force)"
        )
    plan = plan_dhcp_evacuate(snapshot, source.id, policy)
    step = _execute(ctx, request, snapshot, plan, require_dead_source=not request.force)
    problems = () if request.dry_run else _verify(ctx, step, source)
    return DhcpResult(request.action, (step,), problems=problems)


def drain(ctx: DhcpContext, request: DhcpRequest) -> DhcpResult:
    """Move every network off a live DHCP agent, then disable it (a disabled agent drops
    its networks), then move whatever Neutron scheduled to it meanwhile."""
    _finish_interrupted(ctx, request)
    snapshot = ctx.observe()
    agent = snapshot.find_agent(request.agent or "")
    policy = _policy(request, snapshot)
    _gate_fleet(request, snapshot, "drain")
    first = _execute(ctx, request, snapshot, plan_dhcp_drain(snapshot, agent.id, policy))
    change = drain_change(agent, snapshot.observed_at, "dhcp drain: no network left on the agent")
    side = _DhcpDrain(ctx, request, policy, agent.id)
    done = finish_drain(side, ctx.notify, agent, first, change, dry_run=request.dry_run)
    return DhcpResult(request.action, tuple(done.steps), problems=done.problems)


@dataclass
class _DhcpDrain:
    """The DHCP side of the drain flow (``l3ha.operations.drain``)."""

    ctx: DhcpContext
    request: DhcpRequest
    policy: DhcpPolicy
    agent_id: str
    agent_words: str = "DHCP agent"
    noun: str = "network"
    arrived: str = "{count} network(s) arrived on DHCP agent {host} while it drained"
    landed: str = "{count} network(s) landed meanwhile"

    def observe(self) -> DhcpSnapshot:
        return self.ctx.observe()

    def on_agent(self, snapshot: DhcpSnapshot, agent_id: str) -> Sized:
        return snapshot.networks_of_agent(agent_id)

    def left_on(self, agent: Agent) -> Sized:
        return self.ctx.observe().networks_of_agent(agent.id)

    def drain_pass(self, snapshot: DhcpSnapshot) -> DhcpExecuted:
        plan = plan_dhcp_drain(snapshot, self.agent_id, self.policy)
        return _execute(self.ctx, self.request, snapshot, plan)

    def change_agent(self, change: AgentChange, agent: Agent) -> AgentChangeResult:
        dry_run = self.request.dry_run
        journal = None if dry_run else self.ctx.journal
        ctx = self.ctx
        return change_dhcp_agent(
            ctx.cloud, journal, ctx.clock, change, dry_run=dry_run, current=agent
        )

    def stranded(self, step: DhcpExecuted) -> int | None:
        return len(step.run.unplaced) if step.run.unplaced else None

    def unfinished(self, last: DhcpExecuted, agent: Agent, left: Sized) -> tuple[str, ...]:
        problems = _verify(self.ctx, last, agent)
        if not problems and last.exit_code == 0:
            return ()
        self.ctx.notify(
            f"DHCP agent {agent.host} left enabled: networks are still on it (a disabled "
            "agent drops its networks); fix the cause and drain again"
        )
        return (*problems, "agent left enabled")


def undrain(ctx: DhcpContext, request: DhcpRequest) -> DhcpResult:
    """Enable a DHCP agent again, clearing l3ha's drain mark."""
    snapshot = ctx.observe()
    agent = snapshot.find_agent(request.agent or "")
    change = undrain_change(agent, "dhcp undrain: back in service")
    result = change_dhcp_agent(
        ctx.cloud, ctx.journal, ctx.clock, change, dry_run=request.dry_run, current=agent
    )
    if result.outcome is AgentChangeOutcome.DONE:
        ctx.notify(f"DHCP agent {agent.host} enabled")
    return DhcpResult(request.action, (AgentChanged(result),))


def repair(ctx: DhcpContext, request: DhcpRequest) -> DhcpResult:
    """Every network to exactly the target count on live agents (extra copies: ``trim``)."""
    _finish_interrupted(ctx, request)
    snapshot = ctx.observe()
    policy = _policy(request, snapshot)
    _gate_fleet(request, snapshot, "repair DHCP networks")
    plan = plan_dhcp_repair(snapshot, policy)
    step = _execute(ctx, request, snapshot, plan, require_dead_source=True)
    problems = () if request.dry_run else _verify(ctx, step, None)
    return DhcpResult(request.action, (step,), problems=problems)


def return_networks(ctx: DhcpContext, request: DhcpRequest) -> DhcpResult:
    """``request.networks`` back onto the live, enabled agent ``request.agent`` (a host
    restored after maintenance), make before break; no fallback target."""
    _finish_interrupted(ctx, request)
    snapshot = ctx.observe()
    agent = snapshot.find_agent(request.agent or "")
    if not usable(agent):
        raise SafetyHaltError(f"DHCP agent {agent.host} is not alive and enabled: not returning")
    plan = plan_dhcp_return(snapshot, list(request.networks), agent.id)
    step = _execute(ctx, request, snapshot, plan, fallbacks=False)
    problems = () if request.dry_run else _verify(ctx, step, None)
    return DhcpResult(request.action, (step,), problems=problems)


# --- the shared flow ---------------------------------------------------------


def _policy(request: DhcpRequest, snapshot: DhcpSnapshot) -> DhcpPolicy:
    allowed = frozenset(snapshot.find_agent(ref).id for ref in request.to) if request.to else None
    return DhcpPolicy(request.agents_per_network, allowed, request.trim)


def _gate_fleet(request: DhcpRequest, snapshot: DhcpSnapshot, words: str) -> None:
    """Refuse while many DHCP agents look dead at once (safety rules 1, 2, 9)."""
    refuse_when_fleet_down(snapshot.agents, words, force=request.force, which="DHCP agents")


def _finish_interrupted(ctx: DhcpContext, request: DhcpRequest) -> None:
    if ctx.journal is None:
        return
    for found in recover_dhcp(ctx.cloud, ctx.journal, dry_run=request.dry_run):
        ctx.notify(
            f"interrupted DHCP operation {found.operation_id}: network {found.network_id} "
            f"{found.action.value} ({found.detail})"
        )


def _execute(
    ctx: DhcpContext,
    request: DhcpRequest,
    snapshot: DhcpSnapshot,
    plan: DhcpPlan,
    *,
    require_dead_source: bool = False,
    fallbacks: bool = True,
) -> DhcpExecuted:
    kept, note = cut_to_budget(plan.moves, request.move_budget, lambda m: m.network_id)
    if note:
        plan = replace(plan, moves=kept, warnings=(*plan.warnings, note))
    executor = DhcpExecutor(ctx.cloud, ctx.journal, ctx.clock, request.execution)
    run = executor.run(
        plan,
        snapshot.agents_by_id,
        fallbacks=fallback_targets(snapshot, _policy(request, snapshot)) if fallbacks else None,
        require_dead_source=require_dead_source,
        args=operation_args(request, recorded_network_names(snapshot, plan.moves)),
        should_stop=ctx.should_stop,
    )
    if plan.unplaceable and not request.dry_run:
        ctx.notify(f"{len(plan.unplaceable)} network(s) could not be placed and were not moved")
    return DhcpExecuted(plan, snapshot, run)


def recorded_network_names(snapshot: DhcpSnapshot, moves: Sequence[DhcpMove]) -> dict[str, str]:
    """What a DHCP operation records as its ``names`` (as a router operation does): every
    DHCP agent's host, and the name of every network it moves that has one."""
    names = {agent.id: agent.host for agent in snapshot.agents}
    for move in moves:
        network = snapshot.networks_by_id.get(move.network_id)
        if network is not None and network.name:
            names[move.network_id] = network.name
    return names


def fallback_targets(
    snapshot: DhcpSnapshot, policy: DhcpPolicy
) -> Callable[[DhcpMove], Sequence[str]]:
    """Agents a move may fall back to: live, enabled, allowed, not hosting it; least loaded."""
    ranked = sorted(
        (a for a in snapshot.agents if usable(a)),
        key=lambda a: (len(snapshot.networks_of_agent(a.id)), a.host, a.id),
    )
    allowed = policy.allowed_targets

    def candidates(move: DhcpMove) -> list[str]:
        hosts = set(snapshot.agents_of_network(move.network_id))
        return [
            a.id
            for a in ranked
            if a.id not in hosts and a.id != move.source and (allowed is None or a.id in allowed)
        ]

    return candidates


def _verify(ctx: DhcpContext, step: DhcpExecuted, source: Agent | None) -> tuple[str, ...]:
    """After a run: what was reported off ``source`` is gone from it, and every network
    that was served before still is."""
    after = ctx.observe()
    problems: list[str] = []
    if source is not None:
        moved = {
            r.move.network_id
            for r in step.run.results
            if r.outcome in (DhcpOutcome.MOVED, DhcpOutcome.REMOVED)
        }
        now_on = after.networks_of_agent(source.id)
        still = still_on_source(ctx.notify, "network", moved, now_on, source.host)
        if still:
            problems.append(f"{len(still)} network(s) still on {source.host}")
        left = after.networks_of_agent(source.id)
        if left and not still:
            problems.append(f"{len(left)} network(s) left on {source.host}")
    before = step.snapshot
    lost = sorted(
        n.id
        for n in before.networks
        if before.serving_agents(n.id)
        and n.id in after.networks_by_id
        and not after.serving_agents(n.id)
    )
    if lost:
        ctx.notify(f"{len(lost)} network(s) served before are served by no live agent now")
        problems.append(f"{len(lost)} network(s) lost DHCP during the run")
    return tuple(problems)
