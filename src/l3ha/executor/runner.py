"""The executor: runs a plan against the cloud within budgets. I/O: cloud, journal, threads.

This is the one place that changes Neutron. It starts moves in plan order
(skipping ahead only past moves whose target is at its in-flight limit or
whose router still has an earlier move running), at most ``concurrency``
writing at once, no faster than the token bucket allows. Each move's writes
are in ``l3ha.executor.steps``; waiting for ports is in
``l3ha.executor.ports`` and holds no write slot. A canary batch runs first:
once its writes are read back (its ports come up in the background, like
everyone's; a canary is judged by its writes, not by a wave of router
processing), the sources are re-read for evacuations (and repairs) before
the rest: once a source is usable again (alive AND enabled) its remaining
moves, replica additions and replica removals are skipped. If every canary
move went wrong, nothing else starts. A move that ends with an
unexpected error or with its router on no agent goes through
``l3ha.executor.salvage`` before it is reported. Routers the plan could not
place are carried into ``RunResult.unplaced`` (the run is then not ok).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from l3ha.cloud.base import Cloud
from l3ha.executor.agents import AgentChange, AgentChangeResult, change_agent
from l3ha.executor.candidates import FallbackTargets, candidate_list
from l3ha.executor.lifecycle import (
    NOT_STARTED_STOPPING,
    ExecutorBase,
    StopRequest,
    close_operation,
    require_journal,
)
from l3ha.executor.outcome import BAD_OUTCOMES, MoveOutcome, MoveResult, Progress, RunResult
from l3ha.executor.ports import PortWaiter, RouterReadiness
from l3ha.executor.ratelimit import RunBudgets
from l3ha.executor.salvage import salvage
from l3ha.executor.steps import NO_AGENT, SOURCE_BACK, MoveWriter, SourceWatch, Written
from l3ha.journal import Journal
from l3ha.model import Agent, Move, MoveKind, Plan, Router

log = logging.getLogger(__name__)

#: Operation kinds whose sources must stay unusable (dead or disabled): a move
#: of a source that is alive and enabled again is skipped (rule 5).
SOURCE_MUST_BE_DEAD = frozenset({"evacuate", "repair", "ha-repair"})
#: Move kinds that are skipped once their source is usable again.
_SOURCE_CHECKED = frozenset({MoveKind.MOVE, MoveKind.ADD_REPLICA, MoveKind.REMOVE_REPLICA})
#: Outcomes after which a later REMOVE_REPLICA of the same router may run.
_ADD_CONFIRMED = frozenset({MoveOutcome.MOVED, MoveOutcome.PENDING, MoveOutcome.SKIPPED})

ProgressCallback = Callable[[Progress], None]


@dataclass
class _Item:
    index: int
    move: Move
    move_id: int = 0
    slot: str | None = None
    started: float = 0.0
    written: bool = False  # its writes are done and read back (ports may still come up)
    write_seconds: float = 0.0  # from ``started`` until written
    result: MoveResult | None = None


class Executor(ExecutorBase[Cloud]):
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
        run = _Run(
            self,
            plan,
            kind=kind,
            fallbacks=fallback_targets,
            progress=progress,
            must_be_dead=must_be_dead,
            journal=journal,
            should_stop=should_stop,
            routers=routers,
        )
        return run.execute(dict(args or {}), warnings)

    def change_agent(self, change: AgentChange, current: Agent | None = None) -> AgentChangeResult:
        """Change an agent's admin state or description (``l3ha.executor.agents``).

        ``current``: the agent as last seen, so that a change to what already
        is writes nothing. Honours dry run like ``run``.
        """
        return change_agent(
            self.cloud,
            self.journal,
            self.clock,
            change,
            dry_run=self.options.dry_run,
            current_admin_state=current.admin_state_up if current else None,
            current_description=current.description if current else None,
        )


class _Run:
    """One execution of one plan."""

    def __init__(
        self,
        executor: Executor,
        plan: Plan,
        *,
        kind: str,
        fallbacks: FallbackTargets | None,
        progress: ProgressCallback | None,
        must_be_dead: bool,
        journal: Journal,
        should_stop: Callable[[], bool] | None = None,
        routers: Mapping[str, Router] | None = None,
    ) -> None:
        self.ex = executor
        self.opts = executor.options
        self.clock = executor.clock
        self.plan = plan
        self.kind = kind
        self.fallbacks = fallbacks
        self.progress = progress
        self.stop = StopRequest(should_stop)
        self.journal = journal
        self.items = [_Item(i, m) for i, m in enumerate(plan.moves)]
        self.state = RunBudgets(self.opts, self.clock)  # its ``cond`` guards the items too
        self.finished = 0
        self.sources = SourceWatch(must_be_dead)
        self.writer = MoveWriter(
            executor.cloud, journal, self.clock, self.opts, self.sources, routers=routers
        )
        self.guard = self.writer.guard  # the journal's failures, shared with the writer
        self.run_started = self.clock.monotonic()  # set again when ``execute`` begins

    # --- the whole run -----------------------------------------------------

    def execute(self, args: dict[str, object], warnings: tuple[str, ...]) -> RunResult:
        started = self.run_started = self.clock.monotonic()
        canary = max(0, min(self.plan.canary, len(self.items)))
        args.setdefault("canary", canary)
        op_id, move_ids = self.journal.begin_operation(self.kind, args, self.plan.moves)
        for item, move_id in zip(self.items, move_ids, strict=True):
            item.move_id = move_id
        pool = ThreadPoolExecutor(max_workers=self.opts.concurrency, thread_name_prefix="l3ha-move")
        waiter = (
            PortWaiter(
                RouterReadiness(self.ex.cloud),
                self.clock,
                self.opts.port_poll_interval,
                self.opts.port_poll_window,
            )
            if self.opts.wait_ports
            else None
        )
        try:
            self._dispatch(self.items[:canary], pool, waiter, until_written=True)
            if canary:
                self._after_canary(self.items[:canary])
            self._dispatch(self.items[canary:], pool, waiter)
        except BaseException:
            self.journal.abandon(op_id)  # interrupted: recovery may finish it
            raise
        finally:
            pool.shutdown(wait=True)
            if waiter is not None:
                waiter.close()
        results = tuple(i.result for i in self.items if i.result is not None)
        result = RunResult(
            self.kind,
            results,
            op_id,
            False,
            warnings,
            self.clock.monotonic() - started,
            self.plan.unplaceable,
        )
        unstarted = sum(1 for i in self.items if self._stopped_before_start(i))
        notes = close_operation(
            self.guard, op_id, unstarted=unstarted, ok=result.ok, counts=result.counts()
        )
        return replace(result, warnings=(*warnings, *notes))

    def _stopped_before_start(self, item: _Item) -> bool:
        """A move the caller's stop request kept from starting (its outcome is not journalled)."""
        return self.stop.stopped and not item.started

    def _after_canary(self, canary: list[_Item]) -> None:
        """Once every canary move is written (bound, read back) or finished: re-check the
        sources; stop everything if the whole canary batch went wrong."""
        with self.state.cond:
            outcomes = [None if i.result is None else i.result.outcome for i in canary if i.started]
        if outcomes and all(o in BAD_OUTCOMES for o in outcomes):
            for item in self.items[len(canary) :]:
                self._finish(
                    item,
                    MoveResult(
                        item.move,
                        MoveOutcome.SKIPPED,
                        "not started: every move of the canary batch failed",
                    ),
                )
            return
        sources = sorted({i.move.source for i in self.items[len(canary) :] if i.move.source})
        if sources and self.sources.require_dead:
            self.writer.agents.refresh()  # one read of every agent, now
        for source in sources:
            self.writer.source_came_back(source)

    # --- dispatching -------------------------------------------------------

    def _dispatch(
        self,
        items: list[_Item],
        pool: ThreadPoolExecutor,
        waiter: PortWaiter | None,
        *,
        until_written: bool = False,
    ) -> None:
        """Start every item (respecting budgets); return when every move of the run has
        finished, or (``until_written``: the canary) when these are written or finished."""
        wait_for = items if until_written else self.items
        remaining = [i for i in items if i.result is None]
        while True:
            with self.state.cond:
                if self.guard.error or self.stop():
                    revived, remaining = remaining, []
                else:
                    revived = self._revived(remaining)
                remaining = [i for i in remaining if i.result is None and i not in revived]
                settled = all(
                    i.result is not None or (until_written and i.written) for i in wait_for
                )
                if not remaining and not revived and settled:
                    return
                item = self._next_startable(remaining)
                claimed = item is not None and self.state.bucket.try_take()
                if item is not None and claimed:
                    remaining.remove(item)
                    item.slot = self.state.claim(item.move.router_id, item.move.target)
                    item.started = self.clock.monotonic()
                elif item is None and not revived:
                    self.state.cond.wait(timeout=0.2)
            for skipped in revived:
                self._finish(
                    skipped,
                    MoveResult(skipped.move, MoveOutcome.SKIPPED, self._why_skipped(skipped)),
                )
            if item is None:
                continue
            if not claimed:
                self.clock.sleep(max(self.state.bucket.wait_time(), 1e-3))
                continue
            pool.submit(self._work, item, waiter)

    def _revived(self, remaining: list[_Item]) -> list[_Item]:
        """Not-started moves whose source is usable again (none while the router is busy)."""
        return [
            i
            for i in remaining
            if i.move.kind in _SOURCE_CHECKED
            and i.move.router_id not in self.state.busy
            and self.sources.revived(i.move.source)
        ]

    def _why_skipped(self, item: _Item) -> str:
        if self.guard.error:
            return self.guard.why_not_started()
        if self.stop.stopped:
            return NOT_STARTED_STOPPING
        if item.move.kind is MoveKind.MOVE:
            return f"{SOURCE_BACK}; not moved"
        if item.move.kind is MoveKind.ADD_REPLICA:
            return f"{SOURCE_BACK}; its replica is kept, none added"
        added = [
            e.result.target or e.move.target or "?"
            for e in self.items[: item.index]
            if e.move.router_id == item.move.router_id
            and e.move.kind is MoveKind.ADD_REPLICA
            and e.result is not None
            and e.result.outcome in (MoveOutcome.MOVED, MoveOutcome.PENDING)
        ]
        if added:
            return f"{SOURCE_BACK}: its replica is kept next to the new one on {', '.join(added)}"
        return f"{SOURCE_BACK}; its replica is kept"

    def _next_startable(self, remaining: list[_Item]) -> _Item | None:
        """The first move that may start now; a router's moves start in plan order."""
        held: set[str] = set()  # routers with an earlier move not startable yet
        for item in remaining:
            router = item.move.router_id
            if router not in held and self.state.has_room(router, item.move.target):
                return item
            held.add(router)
        return None

    # --- one move ------------------------------------------------------------

    def _work(self, item: _Item, waiter: PortWaiter | None) -> None:
        try:
            outcome = self._write(item)
            if isinstance(outcome, MoveResult) and outcome.outcome is MoveOutcome.UNHOSTED:
                outcome = self._salvage(item, outcome.reason.removeprefix(NO_AGENT))
        except Exception as exc:  # a bug or an unexpected error: never leave it silent
            log.exception("move of router %s failed unexpectedly", item.move.router_id)
            outcome = self._salvage(item, exc)
        finally:
            self.state.written()
        if isinstance(outcome, MoveResult):
            self._finish(item, outcome)
            return
        if item.slot is not None:
            self.state.slots.transfer(item.slot, outcome.target)
            item.slot = outcome.target
        with self.state.cond:
            item.written = True
            item.write_seconds = self.clock.monotonic() - item.started
            self.state.cond.notify_all()
        if waiter is None:
            self._finish(item, self._written_result(item, outcome, True, ()))
            return
        waiter.add(
            item.move.router_id,
            item.move.kind,
            outcome.target_host,
            self.opts.port_timeout,
            lambda ready, waiting: self._finish(
                item, self._written_result(item, outcome, ready, waiting)
            ),
        )

    def _write(self, item: _Item) -> MoveResult | Written:
        blocked = self._blocked_by_earlier(item)
        if blocked is not None:
            return blocked
        candidates = candidate_list(item.move, self.fallbacks)
        return self.writer.perform(item.move, item.move_id, candidates)

    def _salvage(self, item: _Item, error: object) -> MoveResult | Written:
        """Read the router back and re-bind it if it has no agent (``l3ha.executor.salvage``)."""
        candidates = candidate_list(item.move, self.fallbacks)
        return salvage(self.writer, item.move, item.move_id, candidates, error)

    def _blocked_by_earlier(self, item: _Item) -> MoveResult | None:
        """REMOVE_REPLICA runs only after the same router's ADD_REPLICA is read back."""
        if item.move.kind is not MoveKind.REMOVE_REPLICA:
            return None
        for earlier in self.items[: item.index]:
            if earlier.move.router_id != item.move.router_id:
                continue
            if earlier.move.kind is MoveKind.ADD_REPLICA and (
                earlier.result is None or earlier.result.outcome not in _ADD_CONFIRMED
            ):
                return MoveResult(
                    item.move,
                    MoveOutcome.SKIPPED,
                    "the replacement replica was not added; old replica kept",
                )
        return None

    def _written_result(
        self, item: _Item, written: Written, ready: bool, waiting: tuple[str, ...]
    ) -> MoveResult:
        if ready:
            return MoveResult(
                item.move,
                MoveOutcome.MOVED,
                written.note or item.move.reason,
                written.target,
                attempts=written.attempts,
            )
        ports = ", ".join(waiting) or "no port yet"
        return MoveResult(
            item.move,
            MoveOutcome.PENDING,
            f"bound, but ports not ACTIVE after {self.opts.port_timeout:g}s: {ports}",
            written.target,
            waiting,
            written.attempts,
        )

    def _journal_outcome(self, item: _Item, result: MoveResult) -> None:
        if not self._stopped_before_start(item):
            self.guard.outcome(item.move_id, result.outcome.value, result.reason, result.target)

    def _finish(self, item: _Item, result: MoveResult) -> None:
        """Record the outcome (journal first, outside the lock), free its budgets."""
        if item.result is not None:
            return
        seconds = self.clock.monotonic() - item.started if item.started else 0.0
        after = item.started - self.run_started if item.started else 0.0
        result = replace(
            result, seconds=seconds, write_seconds=item.write_seconds, started_after=after
        )
        self._journal_outcome(item, result)
        if result.outcome is MoveOutcome.UNHOSTED:
            log.error("router %s has NO agent: %s", item.move.router_id, result.reason)
        with self.state.cond:
            if item.result is not None:
                return
            item.result = result
            slot, item.slot = item.slot, None
            self.finished += 1
            done = self.finished
            self.state.done(item.move.router_id, slot)  # ``cond`` is re-entrant
        if self.progress is not None:
            self.progress(Progress(done, len(self.items), result))
