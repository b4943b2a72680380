"""The executor of router plans: runs a plan against the cloud within budgets.
I/O: cloud, journal, threads.

This is the one place that changes Neutron's L3 scheduling. When and how
moves start (budgets, canary batch, stop, journal failure, readiness) is the
one dispatcher every kind shares (``l3ha.executor.dispatch``); what one router
move does is the router kind (``l3ha.kinds.router``), its writes are in
``l3ha.executor.steps``. The canary batch is the plan's ``canary`` moves:
once its writes are read back, the sources are re-read for evacuations (and
repairs) before the rest: once a source is usable again (alive AND enabled)
its remaining moves, replica additions and replica removals are skipped.
Routers the plan could not place are carried into ``RunResult.unplaced``
(the run is then not ok).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from l3ha.cloud.base import Cloud
from l3ha.executor.agents import AgentChanger
from l3ha.executor.candidates import FallbackTargets
from l3ha.executor.dispatch import Dispatcher
from l3ha.executor.lifecycle import ExecutorBase, require_journal
from l3ha.executor.outcome import MoveOutcome, MoveResult, Progress, RunResult
from l3ha.executor.steps import MoveWriter, SourceWatch
from l3ha.kinds.router import RouterKind
from l3ha.model import Plan, Router

#: Operation kinds whose sources must stay unusable (dead or disabled): a move
#: of a source that is alive and enabled again is skipped (rule 5).
SOURCE_MUST_BE_DEAD = frozenset({"evacuate", "repair", "ha-repair"})

ProgressCallback = Callable[[Progress], None]


class Executor(ExecutorBase[Cloud], AgentChanger):
    """Runs plans; see the module docstring."""

    def run(
        self,
        plan: Plan,
        operation_kind: str | None = None,
        *,
        fallback_targets: FallbackTargets | None = None,
        progress: ProgressCallback | None = None,
        args: Mapping[str, object] | None = None,
        require_dead_source: bool | None = None,
        should_stop: Callable[[], bool] | None = None,
        routers: Mapping[str, Router] | None = None,
    ) -> RunResult:
        """Execute ``plan``; every move gets a result, in plan order.

        ``require_dead_source``: skip the moves of a source that is usable
        (alive and enabled) again; ``None`` decides by the operation kind
        (``SOURCE_MUST_BE_DEAD``), ``False`` for ``evacuate --force``. The
        plan's unplaceable routers are carried in ``RunResult.unplaced``.
        ``should_stop``: asked before each move starts; once it answers True
        (a daemon shutting down or losing leadership) no further move starts,
        the moves in flight finish, and the rest are reported skipped.
        ``routers``: the plan's routers by id, so that a fallback target's
        agent mode is checked against its router (DVR routers need dvr_snat).
        """
        kind = operation_kind or plan.action
        warnings = tuple(plan.warnings) + tuple(
            f"router {u.router_id} not placed: {u.reason}" for u in plan.unplaceable
        )
        if self.options.dry_run:
            results = tuple(
                MoveResult(m, MoveOutcome.PLANNED, m.reason, target=m.target) for m in plan.moves
            )
            return RunResult(kind, results, None, True, warnings, unplaced=plan.unplaceable)
        journal = require_journal(self.journal)
        must_be_dead = (
            kind in SOURCE_MUST_BE_DEAD if require_dead_source is None else require_dead_source
        )
        writer = MoveWriter(
            self.cloud,
            journal,
            self.clock,
            self.options,
            SourceWatch(must_be_dead),
            routers=routers,
        )
        dispatcher = Dispatcher(
            RouterKind(writer, fallback_targets, self.options.port_timeout),
            writer.guard,
            self.clock,
            self.options,
            should_stop=should_stop,
            progress=None if progress is None else lambda d, t, r: progress(Progress(d, t, r)),
        )
        canary = max(0, min(plan.canary, len(plan.moves)))
        journal_args = dict(args or {})
        journal_args.setdefault("canary", canary)
        operation = journal.begin_operation(kind, journal_args, plan.moves)
        return dispatcher.run(
            plan.moves,
            operation,
            lambda results, seconds: RunResult(
                kind, results, operation[0], False, warnings, seconds, plan.unplaceable
            ),
            canary=canary,
        )

    def write_agent(
        self, agent_id: str, admin_state_up: bool | None, description: str | None
    ) -> None:
        """An L3 agent's admin state, then its description (``AgentChanger``)."""
        if admin_state_up is not None:
            self.cloud.set_admin_state(agent_id, admin_state_up)
        if description is not None:
            self.cloud.set_description(agent_id, description)
