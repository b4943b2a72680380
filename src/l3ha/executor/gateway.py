"""The gateway executor: runs a gateway plan on OVN chassis. I/O: cloud, journal, threads,
and through what a caller gives, the data plane and OVN's northbound database.

The one place that changes router gateway chassis groups. Moves run through the
dispatcher every kind shares (``l3ha.executor.dispatch``: the same budgets,
``ExecutorOptions``, stop request and journal failure as router moves); what one
router's move does is the gateway kind (``l3ha.kinds.gateway``). Dry run writes nothing
and reports the plan. With a probe, waiting for a router also probes its gateway
addresses (the data plane); with a hosting reader, it reads OVN's northbound database.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from l3ha.executor.dispatch import Dispatcher
from l3ha.executor.gateway_outcome import GatewayMoveResult, GatewayOutcome, GatewayRunResult
from l3ha.executor.gateway_steps import (
    GATEWAY_KIND_PREFIX,
    GatewayHosting,
    GatewayProbe,
    GatewayReadiness,
    GatewayWriter,
    journal_move,
)
from l3ha.executor.lifecycle import ExecutorBase, JournalGuard, require_journal
from l3ha.journal import ObjectKind
from l3ha.kinds.gateway import GatewayKind
from l3ha.model import Agent
from l3ha.planner.gateway import GatewayPlan

if TYPE_CHECKING:  # the SDK-backed cloud, named only as a type: no openstacksdk import here
    from l3ha.cloud.ovn import NeutronOvn  # noqa: F401  (used in a quoted base below)


class GatewayExecutor(ExecutorBase["NeutronOvn"]):
    """Runs gateway plans; see the module docstring."""

    def run(
        self,
        plan: GatewayPlan,
        chassis: Mapping[str, Agent],
        *,
        args: Mapping[str, object] | None = None,
        should_stop: Callable[[], bool] | None = None,
        canary: int = 0,
        probe: GatewayProbe | None = None,
        addresses: Mapping[str, Sequence[str]] | None = None,
        hosting: GatewayHosting | None = None,
    ) -> GatewayRunResult:
        """Execute ``plan``; ``chassis``: every gateway chassis by id. Journalled as the
        operation ``ovn-<action>``; ``canary``: the leading moves written before the rest;
        ``probe``: wait for each router that changed hands to answer on its ``addresses``
        (router id -> gateway addresses), ``hosting``: until OVN says its new chassis hosts
        it; either way the canary before the rest."""
        if self.options.dry_run:
            planned = tuple(
                GatewayMoveResult(m, GatewayOutcome.PLANNED, m.reason, m.target) for m in plan.moves
            )
            return GatewayRunResult(plan.action, planned, None, True, plan.warnings)
        journal = require_journal(self.journal)
        guard = JournalGuard(journal)
        hosts = {c.id: c.host for c in chassis.values()}
        readiness = GatewayReadiness(self.cloud, hosts, probe, addresses or {}, hosting)
        writer = GatewayWriter(self.cloud, guard, self.options.usable)
        kind = GatewayKind(writer, chassis, readiness)
        dispatcher = Dispatcher(kind, guard, self.clock, self.options, should_stop=should_stop)
        operation = journal.begin_operation(
            GATEWAY_KIND_PREFIX + plan.action,
            dict(args or {}),
            [journal_move(m) for m in plan.moves],
            ObjectKind.GATEWAY,
        )
        return dispatcher.run(
            plan.moves,
            operation,
            lambda results, seconds: GatewayRunResult(
                plan.action, results, operation[0], False, plan.warnings, seconds
            ),
            canary=canary,
        )
