"""The OVN gateway actions: gate, plan, execute, verify. I/O: cloud, journal (via ctx).

``evacuate CHASSIS`` takes a dead gateway chassis out of every router's group (so it
cannot pre-empt them back when it returns) and adds a replacement at the bottom where a
router would keep fewer than ``min_chassis`` live chassis (``l3ha.planner.gateway``).
Interrupted gateway operations are closed first (``recover_gateways``).
Gates: a live chassis is refused (moving its primaries is a drain, not an evacuation),
and so is a cloud where every gateway chassis reads dead at once (a southbound outage
looks so: the control plane's fault, not the chassis'). The results use the generic
``PlanExecuted`` and ``OperationResult`` every kind shares.

``drain CHASSIS`` (a live chassis) moves its primaries away one graceful priority change
each, the first router alone as a canary, then lowers the chassis to the bottom of every
group (``plan_drain``). Neutron refuses to disable an OVN agent, so nothing marks the
chassis drained: a router created later may still be scheduled on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING

from l3ha.clock import Clock
from l3ha.errors import SafetyHaltError
from l3ha.executor import ExecutorOptions
from l3ha.executor.gateway import GatewayExecutor
from l3ha.executor.gateway_outcome import GatewayRunResult
from l3ha.executor.gateway_steps import recover_gateways
from l3ha.journal import Journal
from l3ha.journal.history import NAMES
from l3ha.operations.context import Notify, log_notice
from l3ha.operations.planning import cut_to_budget
from l3ha.operations.request import OperationResult, PlanExecuted
from l3ha.ovn_model import DEFAULT_MIN_CHASSIS, OvnSnapshot
from l3ha.planner.gateway import GatewayPlan, plan_drain, plan_evacuate

if TYPE_CHECKING:
    from l3ha.cloud.ovn import NeutronOvn


class GatewayAction(StrEnum):
    """The OVN gateway actions."""

    EVACUATE = "evacuate"
    DRAIN = "drain"
    REBALANCE = "rebalance"  # l3ha.operations.ovn_rebalance
    UNDRAIN = "undrain"  # l3ha.operations.ovn_rebalance


@dataclass(frozen=True)
class GatewayRequest:
    """One gateway action: ``agent`` names the chassis (host, id or id prefix)."""

    action: GatewayAction
    agent: str
    min_chassis: int = DEFAULT_MIN_CHASSIS
    execution: ExecutorOptions = field(default_factory=ExecutorOptions)
    move_budget: int | None = None
    journal_args: tuple[tuple[str, str], ...] = ()

    @property
    def dry_run(self) -> bool:
        return self.execution.dry_run


@dataclass
class GatewayContext:
    """The handles a gateway action uses; ``observer`` replaces the fresh read."""

    ovn: NeutronOvn
    journal: Journal | None
    clock: Clock
    notify: Notify = log_notice
    observer: Callable[[], OvnSnapshot] | None = None
    should_stop: Callable[[], bool] | None = None

    def observe(self) -> OvnSnapshot:
        return self.observer() if self.observer is not None else self.ovn.read_ovn_snapshot()


class GatewayExecuted(PlanExecuted[GatewayPlan, OvnSnapshot, GatewayRunResult]):
    """A gateway plan and its run."""


class GatewayResult(OperationResult[GatewayAction, GatewayExecuted]):
    """What one gateway action did and its exit code (0 done, 1 not)."""


def evacuate(ctx: GatewayContext, request: GatewayRequest) -> GatewayResult:
    """Every router group rid of a dead chassis; replacements where redundancy drops."""
    short: frozenset[str] = frozenset()
    if ctx.journal is not None:
        lines, short = recover_gateways(ctx.ovn, ctx.journal, dry_run=request.dry_run)
        for line in lines:
            ctx.notify(f"interrupted gateway move closed: {line}")
    world = _gated(ctx, request)
    chassis = world.find_chassis(request.agent)
    if chassis.alive:
        raise SafetyHaltError(
            f"gateway chassis {chassis.host} is alive: evacuate is for a dead chassis "
            "(removing it would fail its routers over); nothing changed"
        )
    plan = plan_evacuate(world, chassis.id, request.min_chassis, request.action.value, short)
    step = _execute(ctx, request, world, plan)
    problems = () if request.dry_run else _verify(ctx, chassis.id, request.min_chassis)
    return GatewayResult(request.action, (step,), problems=problems)


def drain(ctx: GatewayContext, request: GatewayRequest) -> GatewayResult:
    """A live chassis' primaries moved away gracefully, then the chassis at the bottom."""
    world = _gated(ctx, request)
    chassis = world.find_chassis(request.agent)
    if not chassis.alive:
        raise SafetyHaltError(
            f"gateway chassis {chassis.host} is dead: its routers have failed over already; "
            f"use 'l3ha evacuate {chassis.host}' so it cannot fail them back; nothing changed"
        )
    plan = plan_drain(world, chassis.id, request.action.value)
    step = _execute(ctx, request, world, plan, canary=1)
    problems: tuple[str, ...] = ()
    if not request.dry_run:
        after = ctx.ovn.read_ovn_snapshot()
        problems = tuple(
            f"router {r} still has its primary on {chassis.host}"
            for r in after.primaries_of(chassis.id)
        )
    return GatewayResult(request.action, (step,), problems=problems)


def _gated(ctx: GatewayContext, request: GatewayRequest) -> OvnSnapshot:
    """The world to plan on, unless every gateway chassis reads dead (a control plane fault)."""
    world = ctx.observe()
    if world.chassis and not any(c.alive for c in world.chassis):
        raise SafetyHaltError(
            "every gateway chassis reads dead: the control plane's fault (a southbound "
            "outage?), not the chassis'; nothing changed"
        )
    return world


def _execute(
    ctx: GatewayContext,
    request: GatewayRequest,
    world: OvnSnapshot,
    plan: GatewayPlan,
    canary: int = 0,
) -> GatewayExecuted:
    kept, note = cut_to_budget(plan.moves, request.move_budget, lambda m: m.router_id)
    if note:
        plan = replace(plan, moves=kept, warnings=(*plan.warnings, note))
    names = {c.id: c.host for c in world.chassis} | {r.id: r.name for r in world.routers}
    executor = GatewayExecutor(ctx.ovn, ctx.journal, ctx.clock, request.execution)
    run = executor.run(
        plan,
        world.chassis_by_id,
        args=_journal_args(request, names),
        should_stop=ctx.should_stop,
        canary=canary,
    )
    return GatewayExecuted(plan, world, run)


def _journal_args(request: GatewayRequest, names: dict[str, str]) -> dict[str, object]:
    """What the journal records with the operation, as ``operation_args`` records it for the
    other kinds (whose request types it names)."""
    asked = {"command": request.action.value, "agent": request.agent}
    return asked | dict(request.journal_args) | {NAMES: names}


def _verify(ctx: GatewayContext, chassis_id: str, min_chassis: int) -> tuple[str, ...]:
    """Read the cloud again: no group holds the chassis; every router keeps as many live
    chassis as the cloud allows, up to ``min_chassis``."""
    world = ctx.ovn.read_ovn_snapshot()
    problems = [
        f"router {r} still has gateway chassis {chassis_id}" for r in world.routers_of(chassis_id)
    ]
    live = sum(1 for c in world.chassis if c.alive and c.id != chassis_id)
    wanted = min(min_chassis, live)
    for router in world.routers:
        group = world.group(router.id)
        have = len(world.live_chassis(router.id))
        if group and have < wanted:
            problems.append(f"router {router.id} has {have} live gateway chassis (wanted {wanted})")
    return tuple(problems)
