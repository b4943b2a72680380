"""The DHCP executor: runs a DHCP plan make before break. I/O: cloud, journal, threads.

The one place that changes Neutron's DHCP scheduling. Moves run through the
dispatcher every kind shares (``l3ha.executor.dispatch``: the same budgets,
``ExecutorOptions``, stop request and journal failure as router moves); what
one network move does is the DHCP kind (``l3ha.kinds.dhcp``). A DHCP agent's
admin state and description change through ``change_agent`` (``l3ha.executor.agents``),
as an L3 agent's do. Dry run writes nothing and reports the plan.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from l3ha.cloud.dhcp_base import DhcpCloud
from l3ha.dhcp_model import DhcpMove, DhcpPlan
from l3ha.executor.agents import AgentChanger
from l3ha.executor.dhcp_steps import DhcpWriter, journal_move
from l3ha.executor.dispatch import Dispatcher
from l3ha.executor.lifecycle import ExecutorBase, JournalGuard, require_journal
from l3ha.executor.outcome import DhcpMoveResult, DhcpOutcome, DhcpRunResult
from l3ha.journal import ObjectKind
from l3ha.kinds.dhcp import DhcpKind
from l3ha.model import Agent

__all__ = ["DhcpExecutor", "DhcpMoveResult", "DhcpOutcome", "DhcpRunResult"]


class DhcpExecutor(ExecutorBase[DhcpCloud], AgentChanger):
    """Runs DHCP plans and changes DHCP agents; see the module docstring."""

    agent_change_kind = "dhcp-agent-state"
    agent_label = "DHCP agent"

    def write_agent(
        self, agent_id: str, admin_state_up: bool | None, description: str | None
    ) -> None:
        """A DHCP agent's admin state and description in one write (``AgentChanger``)."""
        self.cloud.set_dhcp_agent_state(agent_id, admin_state_up, description)

    def run(
        self,
        plan: DhcpPlan,
        agents: Mapping[str, Agent],
        *,
        fallbacks: Callable[[DhcpMove], Sequence[str]] | None = None,
        require_dead_source: bool = False,
        args: Mapping[str, object] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> DhcpRunResult:
        """Execute ``plan``; ``agents``: every DHCP agent by id (for hosts and messages).

        ``require_dead_source``: skip a move whose source the plan saw dead or
        disabled (``DhcpMove.source_down``) once it is alive and enabled again
        (safety rule 5; off for ``--force``).
        """
        if self.options.dry_run:
            planned = tuple(
                DhcpMoveResult(m, DhcpOutcome.PLANNED, m.reason, m.target) for m in plan.moves
            )
            return DhcpRunResult(
                plan.action, planned, None, True, plan.warnings, unplaced=plan.unplaceable
            )
        journal = require_journal(self.journal)
        guard = JournalGuard(journal)
        kind = DhcpKind(
            DhcpWriter(self.cloud, guard, self.options.usable),
            agents,
            fallbacks,
            require_dead_source=require_dead_source,
            port_timeout=self.options.port_timeout,
        )
        dispatcher = Dispatcher(kind, guard, self.clock, self.options, should_stop=should_stop)
        moves = [journal_move(m) for m in plan.moves]
        operation = journal.begin_operation(
            plan.action, dict(args or {}), moves, ObjectKind.NETWORK
        )
        return dispatcher.run(
            plan.moves,
            operation,
            lambda results, seconds: DhcpRunResult(
                plan.action, results, operation[0], False, plan.warnings, seconds, plan.unplaceable
            ),
        )
