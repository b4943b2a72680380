"""The OVN gateway rebalance and undrain: gate, plan, execute, verify. I/O: cloud, journal
(via ctx).

``rebalance`` evens out the routers' primaries over the live gateway chassis that are not
drained (``l3ha.planner.gateway_balance``): each move one graceful priority change (the
target raised above the current primary), the first alone as a canary, within
``max_moves`` and the move budget, through the dispatcher (the gateway kind). Gate: a
cloud where every gateway chassis reads dead at once is refused (a southbound outage, not
the chassis). Verified by reading the groups again: each moved router's primary is its
target.

Neutron refuses to disable an OVN agent, so the mark "drained" lives in l3ha's journal: a
chassis is drained while its latest ``ovn-drain`` operation is newer than its latest
``ovn-undrain`` (``l3ha.operations.ovn.drained_chassis``). ``undrain`` journals the
``ovn-undrain`` (no moves) and, with ``rebalance``, runs the rebalance with the chassis
eligible again.

``rebalance(ctx, request)`` is the public entry the watch daemon calls (``--auto-rebalance``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from l3ha.errors import SafetyHaltError
from l3ha.executor import ExecutorOptions
from l3ha.executor.gateway import GatewayExecutor
from l3ha.executor.gateway_outcome import GatewayOutcome
from l3ha.journal import ObjectKind, OperationStatus
from l3ha.journal.history import NAMES
from l3ha.operations.ovn import (
    UNDRAIN_KIND,
    GatewayAction,
    GatewayContext,
    GatewayExecuted,
    GatewayResult,
    drained_chassis,
    gated,
)
from l3ha.operations.planning import within_budget
from l3ha.operations.request import Executes
from l3ha.ovn_model import OvnSnapshot
from l3ha.planner.gateway import GatewayPlan
from l3ha.planner.gateway_balance import plan_gateway_rebalance
from l3ha.weights import WeightPolicy


@dataclass(frozen=True)
class RebalanceRequest(Executes):
    """One gateway rebalance. ``drained``: chassis never to target (None: read from the
    journal); ``max_moves``: the plan's cap; ``move_budget``: the caller's budget left."""

    weights: WeightPolicy = field(default_factory=WeightPolicy)
    max_moves: int | None = None
    execution: ExecutorOptions = field(default_factory=ExecutorOptions)
    move_budget: int | None = None
    drained: frozenset[str] | None = None
    canary: int = 1
    journal_args: tuple[tuple[str, str], ...] = ()


def rebalance(ctx: GatewayContext, request: RebalanceRequest) -> GatewayResult:
    """Primaries evened out over the live, undrained chassis (module docstring)."""
    world = gated(ctx.observe())
    drained = request.drained
    if drained is None:
        drained = drained_chassis(ctx.journal, world.chassis)
    plan = plan_gateway_rebalance(world, request.weights, drained, request.max_moves)
    step = _execute(ctx, request, world, plan)
    problems = () if request.dry_run else _verify(ctx, step)
    return GatewayResult(GatewayAction.REBALANCE, (step,), problems=problems)


def undrain(
    ctx: GatewayContext, agent: str, request: RebalanceRequest, then_rebalance: bool
) -> GatewayResult:
    """The chassis eligible again (journalled); with ``then_rebalance`` primaries move back
    to it by the rebalance."""
    world = gated(ctx.observe())
    chassis = world.find_chassis(agent)
    if not chassis.alive:
        raise SafetyHaltError(
            f"gateway chassis {chassis.host} is dead: nothing can move to it; nothing changed"
        )
    drained = drained_chassis(ctx.journal, world.chassis)
    if chassis.id not in drained:
        ctx.notify(f"gateway chassis {chassis.host} is not marked drained: eligible already")
    if ctx.journal is not None and not request.dry_run:
        args = {"command": "undrain", "agent": agent, "chassis": chassis.id}
        op_id, _ = ctx.journal.begin_operation(UNDRAIN_KIND, args, (), ObjectKind.GATEWAY)
        ctx.journal.finish_operation(op_id, OperationStatus.DONE, f"undrain {chassis.host}")
    ctx.notify(f"gateway chassis {chassis.host} is eligible for primaries again")
    if not then_rebalance:
        return GatewayResult(GatewayAction.UNDRAIN)
    eligible = replace(request, drained=drained - {chassis.id})
    moved = rebalance(ctx, eligible)
    return GatewayResult(GatewayAction.UNDRAIN, moved.steps, moved.problems)


def _execute(
    ctx: GatewayContext, request: RebalanceRequest, world: OvnSnapshot, plan: GatewayPlan
) -> GatewayExecuted:
    plan = within_budget(plan, request.move_budget)  # whole routers
    names = {c.id: c.host for c in world.chassis} | {r.id: r.name for r in world.routers}
    args = {"command": "rebalance", **dict(request.journal_args), NAMES: names}
    executor = GatewayExecutor(ctx.ovn, ctx.journal, ctx.clock, request.execution)
    run = executor.run(
        plan, world.chassis_by_id, args=args, should_stop=ctx.should_stop, canary=request.canary
    )
    return GatewayExecuted(plan, world, run)


def _verify(ctx: GatewayContext, step: GatewayExecuted) -> tuple[str, ...]:
    """Read the groups again: every moved router's primary is its target."""
    moved = [r for r in step.run.results if r.outcome is GatewayOutcome.MOVED]
    if not moved:
        return ()
    after = ctx.ovn.read_ovn_snapshot()
    hosts = {c.id: c.host for c in after.chassis}
    problems = []
    for result in moved:
        primary = after.primary(result.move.router_id)
        if primary != result.move.target:
            problems.append(
                f"router {result.move.router_id}: primary on {hosts.get(primary or '', primary)}, "
                f"not {hosts.get(result.move.target or '', result.move.target)}"
            )
    return tuple(problems)
