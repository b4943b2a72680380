"""The OVN gateway actions: gate, plan, execute, verify. I/O: cloud, journal (via ctx).

``evacuate CHASSIS`` takes a dead gateway chassis out of every router's group (so it
cannot pre-empt them back when it returns) and adds a replacement at the bottom where a
router would keep fewer than ``min_chassis`` live chassis (``l3ha.planner.gateway``).
Interrupted gateway operations are closed first (``recover_gateways``).
Gates: a live chassis is refused (moving its primaries is a drain, not an evacuation),
and so is a cloud where every gateway chassis reads dead at once (a southbound outage
looks so: the control plane's fault, not the chassis'). Both run through the flow every
kind shares (``l3ha.operations.flow``), over the context, results and budget cut every
kind shares too.

``drain CHASSIS`` (a live chassis) moves its primaries away one graceful priority change
each, the first router alone as a canary, then lowers the chassis to the bottom of every
group (``plan_drain``). Neutron refuses to disable an OVN agent, so nothing marks the
chassis drained: a router created later may still be scheduled on it. With a probe each
moved router must answer on its gateway addresses again, with the northbound database
OVN must show it hosted on its new chassis (the canary before the rest start; a move
holds its target's in-flight slot until then, so ``per_target_inflight`` bounds the
gateways each chassis takes over at once); one still waiting at the deadline is a
problem.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from l3ha.errors import L3haError, SafetyHaltError
from l3ha.executor import ExecutorOptions
from l3ha.executor.gateway import GatewayExecutor
from l3ha.executor.gateway_outcome import GatewayOutcome, GatewayRunResult
from l3ha.executor.gateway_steps import (
    GATEWAY_KIND_PREFIX,
    GatewayHosting,
    GatewayProbe,
    recover_gateways,
)
from l3ha.journal import Journal
from l3ha.model import Agent
from l3ha.operations.context import KindContext, operation_args
from l3ha.operations.flow import run_flow
from l3ha.operations.planning import within_budget
from l3ha.operations.request import Executes, OperationResult, PlanExecuted
from l3ha.ovn_checks import control_plane_fault
from l3ha.ovn_model import DEFAULT_MIN_CHASSIS, OvnSnapshot, resolve_chassis
from l3ha.planner.gateway import GatewayPlan, plan_drain, plan_evacuate

if TYPE_CHECKING:
    from l3ha.cloud.ovn import NeutronOvn


class GatewayAction(StrEnum):
    """The OVN gateway actions."""

    EVACUATE = "evacuate"
    DRAIN = "drain"
    REBALANCE = "rebalance"  # l3ha.operations.ovn_rebalance
    UNDRAIN = "undrain"  # l3ha.operations.ovn_rebalance


#: The journal operations that mark a chassis drained and undrained (Neutron cannot disable
#: an OVN agent, so the mark is l3ha's own).
DRAIN_KIND = GATEWAY_KIND_PREFIX + GatewayAction.DRAIN.value
UNDRAIN_KIND = GATEWAY_KIND_PREFIX + "undrain"


@dataclass(frozen=True)
class GatewayRequest(Executes):
    """One gateway action: ``agent`` names the chassis (host, id or id prefix); ``probe``
    (a drain): each moved router must answer on its gateway addresses again, the canary
    before the rest; ``northbound`` (a drain): OVN's hosting-chassis of every router port
    (port name -> chassis name), which must show each moved router on its new chassis."""

    action: GatewayAction
    agent: str
    min_chassis: int = DEFAULT_MIN_CHASSIS
    execution: ExecutorOptions = field(default_factory=ExecutorOptions)
    move_budget: int | None = None
    journal_args: tuple[tuple[str, str], ...] = ()
    probe: GatewayProbe | None = None
    northbound: Callable[[], Mapping[str, str]] | None = None


class GatewayContext(KindContext["NeutronOvn", OvnSnapshot]):
    """The handles a gateway action uses (its cloud: ``ovn``); ``observer`` replaces the
    fresh read."""

    @property
    def ovn(self) -> NeutronOvn:
        return self.cloud

    def read(self) -> OvnSnapshot:
        return self.cloud.read_ovn_snapshot()


class GatewayExecuted(PlanExecuted[GatewayPlan, OvnSnapshot, GatewayRunResult]):
    """A gateway plan and its run."""


class GatewayResult(OperationResult[GatewayAction, GatewayExecuted]):
    """What one gateway action did and its exit code (0 done, 1 not)."""


def evacuate_or_drain(ctx: GatewayContext, request: GatewayRequest) -> GatewayResult:
    """Evacuate (every router group rid of a dead chassis; replacements where redundancy
    drops) or drain (a live chassis' primaries moved away gracefully, the first alone as
    a canary, then the chassis at the bottom) through the flow every kind shares."""
    side = _Gateways(ctx, request)
    step, problems, _ = run_flow(side, side.plan_on, side.verify, dry_run=request.dry_run)
    return GatewayResult(request.action, (step,), problems=problems)


def gated(world: OvnSnapshot) -> OvnSnapshot:
    """``world``, unless every gateway chassis reads dead: the control plane's fault
    (``control_plane_fault``), not the chassis'."""
    fault = control_plane_fault(world)
    if fault is not None:
        raise SafetyHaltError(fault)
    return world


@dataclass
class _Gateways:
    """The gateway side of the flow (``l3ha.operations.flow``): an evacuation first closes
    interrupted gateway moves (``short``: the routers they left short of a chassis); a
    drain writes its first move alone, the canary, before the rest."""

    ctx: GatewayContext
    request: GatewayRequest
    chassis: Agent | None = None  # the chassis acted on, once planned
    short: frozenset[str] = frozenset()

    def plan_on(self, world: OvnSnapshot) -> GatewayPlan:
        """Gate (a live chassis is not evacuated, a dead one not drained), then plan."""
        request = self.request
        chassis = gated(world).find_chassis(request.agent)
        if request.action is GatewayAction.EVACUATE and chassis.alive:
            raise SafetyHaltError(
                f"gateway chassis {chassis.host} is alive: evacuate is for a dead chassis "
                "(removing it would fail its routers over); nothing changed"
            )
        if request.action is GatewayAction.DRAIN and not chassis.alive:
            raise SafetyHaltError(
                f"gateway chassis {chassis.host} is dead: its routers have failed over already; "
                f"use 'l3ha evacuate {chassis.host}' so it cannot fail them back; nothing changed"
            )
        self.chassis = chassis
        if request.action is GatewayAction.EVACUATE:
            action = request.action.value
            return plan_evacuate(world, chassis.id, request.min_chassis, action, self.short)
        drained = drained_chassis(self.ctx.journal, world.chassis) - {chassis.id}
        return plan_drain(world, chassis.id, request.action.value, drained)

    def recover(self) -> bool:
        if self.ctx.journal is None or self.request.action is not GatewayAction.EVACUATE:
            return True
        lines, self.short = recover_gateways(
            self.ctx.ovn, self.ctx.journal, dry_run=self.request.dry_run
        )
        for line in lines:
            self.ctx.notify(f"interrupted gateway move closed: {line}")
        return True

    def observe(self) -> OvnSnapshot:
        return self.ctx.observe()

    def execute(self, world: OvnSnapshot, plan: GatewayPlan) -> GatewayExecuted:
        ctx, request = self.ctx, self.request
        plan = within_budget(plan, request.move_budget)  # whole routers
        names = {c.id: c.host for c in world.chassis} | {r.id: r.name for r in world.routers}
        executor = GatewayExecutor(ctx.ovn, ctx.journal, ctx.clock, request.execution)
        run = executor.run(
            plan,
            world.chassis_by_id,
            args=operation_args(request, names),
            should_stop=ctx.should_stop,
            canary=1 if request.action is GatewayAction.DRAIN else 0,
            probe=request.probe,
            addresses={r.id: r.gateway_ips for r in world.routers},
            hosting=self.hosting(),
        )
        return GatewayExecuted(plan, world, run)

    def hosting(self) -> GatewayHosting | None:
        """Router id -> the chassis hosting its gateway, from ``northbound`` (Neutron names
        a router's gateway port ``lrp-<gateway port id>`` there)."""
        northbound = self.request.northbound
        if northbound is None:
            return None
        router_of = {f"lrp-{p.port_id}": p.router_id for p in self.ctx.ovn.gateway_ports()}

        def read() -> dict[str, str]:
            return {router_of[n]: c for n, c in northbound().items() if n in router_of}

        return read

    def verify(self, step: GatewayExecuted) -> tuple[str, ...]:
        if self.request.action is GatewayAction.EVACUATE:
            return self.verify_evacuated()
        checked = self.request.probe is not None or self.request.northbound is not None
        waiting = tuple(
            f"router {r.object_id}: {r.reason}"
            for r in step.run.results
            if checked and r.outcome is GatewayOutcome.PENDING
        )
        return waiting + self.verify_drained()

    def verify_drained(self) -> tuple[str, ...]:
        """Read the cloud again: no router keeps its primary on the drained chassis."""
        assert self.chassis is not None
        after = self.ctx.ovn.read_ovn_snapshot()
        return tuple(
            f"router {r} still has its primary on {self.chassis.host}"
            for r in after.primaries_of(self.chassis.id)
        )

    def verify_evacuated(self) -> tuple[str, ...]:
        """Read the cloud again: no group holds the chassis; every router keeps as many live
        chassis as the cloud allows, up to ``min_chassis``."""
        assert self.chassis is not None
        world = self.ctx.ovn.read_ovn_snapshot()
        chassis_id = self.chassis.id
        problems = [
            f"router {r} still has gateway chassis {chassis_id}"
            for r in world.routers_of(chassis_id)
        ]
        live = sum(1 for c in world.chassis if c.alive and c.id != chassis_id)
        wanted = min(self.request.min_chassis, live)
        for router in world.routers:
            group = world.group(router.id)
            have = len(world.live_chassis(router.id))
            if group and have < wanted:
                problems.append(
                    f"router {router.id} has {have} live gateway chassis (wanted {wanted})"
                )
        return tuple(problems)


def drained_chassis(journal: Journal | None, chassis: tuple[Agent, ...]) -> frozenset[str]:
    """The chassis whose latest drain in the journal is newer than their latest undrain."""
    if journal is None:
        return frozenset()
    decided: dict[str, bool] = {}
    for op in journal.history():  # newest first
        if op.kind not in (DRAIN_KIND, UNDRAIN_KIND):
            continue
        ref = str(op.args.get("chassis") or op.args.get("agent") or "")
        try:
            chassis_id = resolve_chassis(chassis, ref).id
        except L3haError:
            continue  # a chassis gone since
        decided.setdefault(chassis_id, op.kind == DRAIN_KIND)
    return frozenset(c for c, is_drained in decided.items() if is_drained)
