"""The DHCP actions: evacuate, drain, undrain, repair, return. I/O: cloud, journal (via context).

``run_dhcp_action(ctx, request)`` runs one action through the flow every
kind shares (``l3ha.operations.flow``): finish interrupted DHCP operations
(from the cloud's state), observe, gate (the fleet gate over the DHCP agents:
many dead at once means the message bus, not the agents), plan
(``l3ha.planner.dhcp``), execute (every write through ``l3ha.executor.dhcp``;
dry run there), verify (nothing reported moved is still on the source, and no
network that had DHCP lost it). The command line, the watch daemon and ``l3ha
rolling`` (which returns a restored host's networks to it) call this. Gates
raise ``SafetyHaltError`` (exit 3), bad references ``NotFoundError`` /
``AmbiguousError`` (exit 2), before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Sized
from dataclasses import dataclass

from l3ha.cloud.dhcp_base import DhcpCloud
from l3ha.dhcp_model import DhcpMove, DhcpPlan, DhcpSnapshot, usable
from l3ha.errors import SafetyHaltError
from l3ha.executor import AgentChange, AgentChangeOutcome, AgentChangeResult
from l3ha.executor.dhcp import DhcpExecutor, DhcpOutcome, DhcpRunResult
from l3ha.executor.dhcp_steps import recover_dhcp
from l3ha.journal.history import recorded_names
from l3ha.model import Agent
from l3ha.operations.context import (
    KindContext,
    operation_args,
    still_on_source,
    undrain_change,
)
from l3ha.operations.drain import DrainWords, run_drain
from l3ha.operations.flow import run_flow
from l3ha.operations.planning import refuse_when_fleet_down, within_budget
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


class DhcpContext(KindContext[DhcpCloud, DhcpSnapshot]):
    """The handles a DHCP action uses; ``observer`` replaces the fresh read (the daemon)."""

    def read(self) -> DhcpSnapshot:
        return self.cloud.read_dhcp_snapshot()


class DhcpExecuted(PlanExecuted[DhcpPlan, DhcpSnapshot, DhcpRunResult]):
    """A DHCP plan and its run."""


class DhcpResult(OperationResult[DhcpAction, DhcpExecuted]):
    """What one DHCP action did, in order, and its exit code (0 done, 1 not)."""


def run_dhcp_action(ctx: DhcpContext, request: DhcpRequest) -> DhcpResult:
    """Run the request's action (see the module docstring): undrain enables the agent, drain
    runs the drain flow (``l3ha.operations.drain``), the rest the flow every kind shares."""
    if request.action is DhcpAction.UNDRAIN:
        return undrain(ctx, request)
    side = _Dhcp(ctx, request)
    if request.action is DhcpAction.DRAIN:
        done = run_drain(
            side, side.plan_on, ctx.notify, request.agent or "", dry_run=request.dry_run
        )
        return DhcpResult(request.action, tuple(done.steps), problems=done.problems)
    step, problems, _ = run_flow(side, side.plan_on, side.verify, dry_run=request.dry_run)
    return DhcpResult(request.action, (step,), problems=problems)


#: What the fleet gate says each action would do.
_GATED = {
    DhcpAction.EVACUATE: "evacuate",
    DhcpAction.DRAIN: "drain",
    DhcpAction.REPAIR: "repair DHCP networks",
}


@dataclass
class _Dhcp:
    """The DHCP side of the flow (``l3ha.operations.flow``) and of the drain flow: how a
    DHCP action gates and plans, recovers, observes, runs a plan. Evacuate: every network
    off a dead (or disabled) agent, make before break; drain: off a live agent, which is
    then disabled (a disabled agent drops its networks); repair: every network to exactly
    the target count on live agents (extra copies: ``trim``); return: ``networks`` back
    onto the live, enabled ``agent`` (a host restored after maintenance), no fallback."""

    ctx: DhcpContext
    request: DhcpRequest
    source: Agent | None = None  # the evacuated or drained agent, once planned
    #: How the DHCP drain names its agent and networks (``l3ha.operations.drain``).
    words = DrainWords(
        "DHCP agent",
        "network",
        arrived="{count} network(s) arrived on DHCP agent {host} while it drained",
        landed="{count} network(s) landed meanwhile",
        disabled="dhcp drain: no network left on the agent",
    )

    def plan_on(self, snapshot: DhcpSnapshot) -> DhcpPlan:
        """Gate (raising ``SafetyHaltError`` before anything is written), then plan."""
        request = self.request
        if request.action is DhcpAction.REPAIR:
            return plan_dhcp_repair(snapshot, self.gated_policy(snapshot))
        agent = snapshot.find_agent(request.agent or "")
        if request.action is DhcpAction.RETURN:
            if not usable(agent):
                raise SafetyHaltError(
                    f"DHCP agent {agent.host} is not alive and enabled: not returning"
                )
            return plan_dhcp_return(snapshot, list(request.networks), agent.id)
        policy = self.gated_policy(snapshot)
        self.source = agent
        if request.action is DhcpAction.DRAIN:
            return plan_dhcp_drain(snapshot, agent.id, policy)
        if usable(agent) and not request.force:
            raise SafetyHaltError(
                f"DHCP agent {agent.host} is alive and enabled: use 'l3ha dhcp drain "
                f"{agent.host}' to move its networks away (or dhcp evacuate --force)"
            )
        return plan_dhcp_evacuate(snapshot, agent.id, policy)

    def gated_policy(self, snapshot: DhcpSnapshot) -> DhcpPolicy:
        """The request's policy, unless many DHCP agents look dead at once: that is the
        message bus, not the agents (safety rules 1, 2, 9)."""
        words, force = _GATED[self.request.action], self.request.force
        policy = _policy(self.request, snapshot)
        refuse_when_fleet_down(snapshot.agents, words, force=force, which="DHCP agents")
        return policy

    def recover(self) -> bool:
        if self.ctx.journal is None:
            return True
        found = recover_dhcp(self.ctx.cloud, self.ctx.journal, dry_run=self.request.dry_run)
        for one in found:
            self.ctx.notify(
                f"interrupted DHCP operation {one.operation_id}: network {one.network_id} "
                f"{one.action.value} ({one.detail})"
            )
        return True

    def observe(self) -> DhcpSnapshot:
        return self.ctx.observe()

    def execute(self, snapshot: DhcpSnapshot, plan: DhcpPlan) -> DhcpExecuted:
        """Hand the plan (within the move budget) to the executor, which skips a move whose
        source is back in an evacuation (but for ``--force``) and a repair, and tries other
        agents (``fallback_targets``) but in a return."""
        ctx, request = self.ctx, self.request
        plan = within_budget(plan, request.move_budget)
        fallbacks = None
        if request.action is not DhcpAction.RETURN:
            fallbacks = fallback_targets(snapshot, _policy(request, snapshot))
        evacuating = request.action is DhcpAction.EVACUATE and not request.force
        executor = _executor(ctx, request)
        moved = (m.network_id for m in plan.moves)
        names = recorded_names(snapshot.agents, snapshot.networks_by_id, moved)
        run = executor.run(
            plan,
            snapshot.agents_by_id,
            fallbacks=fallbacks,
            require_dead_source=evacuating or request.action is DhcpAction.REPAIR,
            args=operation_args(request, names),
            should_stop=ctx.should_stop,
        )
        if plan.unplaceable and not request.dry_run:
            ctx.notify(f"{len(plan.unplaceable)} network(s) could not be placed and were not moved")
        return DhcpExecuted(plan, snapshot, run)

    def verify(self, step: DhcpExecuted) -> tuple[str, ...]:
        return _verify(self.ctx, step, self.source)

    def on_agent(self, snapshot: DhcpSnapshot, agent_id: str) -> Sized:
        return snapshot.networks_of_agent(agent_id)

    def left_on(self, agent: Agent) -> Sized:
        return self.ctx.observe().networks_of_agent(agent.id)

    def drain_pass(self, snapshot: DhcpSnapshot) -> DhcpExecuted:
        assert self.source is not None  # planned by the first pass
        policy = _policy(self.request, snapshot)
        return self.execute(snapshot, plan_dhcp_drain(snapshot, self.source.id, policy))

    def change_agent(self, change: AgentChange, agent: Agent) -> AgentChangeResult:
        return _executor(self.ctx, self.request).change_agent(change, agent)

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
    result = _executor(ctx, request).change_agent(change, agent)
    if result.outcome is AgentChangeOutcome.DONE:
        ctx.notify(f"DHCP agent {agent.host} enabled")
    return DhcpResult(request.action, (AgentChanged(result),))


# --- what the actions share ----------------------------------------------------


def _executor(ctx: DhcpContext, request: DhcpRequest) -> DhcpExecutor:
    """The one place a DHCP action's writes go: moves and agent changes."""
    return DhcpExecutor(ctx.cloud, ctx.journal, ctx.clock, request.execution)


def _policy(request: DhcpRequest, snapshot: DhcpSnapshot) -> DhcpPolicy:
    allowed = frozenset(snapshot.find_agent(ref).id for ref in request.to) if request.to else None
    return DhcpPolicy(request.agents_per_network, allowed, request.trim)


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
        left = after.networks_of_agent(source.id)
        still = still_on_source(ctx.notify, "network", moved, left, source.host)
        if still:
            problems.append(f"{len(still)} network(s) still on {source.host}")
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
