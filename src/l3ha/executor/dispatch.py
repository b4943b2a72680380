"""The one dispatcher: runs a plan's moves of any kind within budgets. I/O: journal, threads.

Generic over a ``Kind`` (``l3ha.kinds.base``): the kind says what one move
does, this module decides *when*. Moves start in plan order, skipping ahead
only past moves whose target is at its in-flight limit or whose object still
has an earlier move running (``RunBudgets``), at most ``concurrency`` writing
at once, no faster than the token bucket allows. Phase one runs on a worker
of the pool; waiting for readiness (``PortWaiter``) holds no write slot; phase
two runs on a worker again. A canary batch (``canary`` moves; 0 for a kind
without one) runs first: once its writes are read back (or, where the kind
says so, once it is ready) the kind re-checks what the rest depends on; if
every canary move went wrong, nothing else starts. A move not started yet
whose source is back (the kind says) is skipped. A journal that cannot be
written and a stop request end the run the same way for every kind
(``l3ha.executor.lifecycle``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Generic, TypeVar

from l3ha.clock import Clock
from l3ha.executor.lifecycle import (
    NOT_STARTED_STOPPING,
    JournalGuard,
    StopRequest,
    close_operation,
)
from l3ha.executor.options import ExecutorOptions
from l3ha.executor.outcome import PlanRun
from l3ha.executor.ports import PortWaiter
from l3ha.executor.ratelimit import RunBudgets
from l3ha.kinds.base import Item, Kind, M, R, Waited, Written

log = logging.getLogger(__name__)

P = TypeVar("P", bound=PlanRun[Any, Any])
T = TypeVar("T")
#: Told after each move finishes: (moves finished, moves in the plan, the result).
ProgressHook = Callable[[int, int, Any], None]
CANARY_FAILED = "not started: every move of the canary batch failed"


class Dispatcher(Generic[M, R]):
    """One run of one plan of one kind; see the module docstring."""

    def __init__(
        self,
        kind: Kind[M, R],
        guard: JournalGuard,
        clock: Clock,
        options: ExecutorOptions,
        *,
        should_stop: Callable[[], bool] | None = None,
        progress: ProgressHook | None = None,
    ) -> None:
        self.kind = kind
        self.guard = guard
        self.clock = clock
        self.opts = options
        self.stop = StopRequest(should_stop)
        self.progress = progress
        self.budgets = RunBudgets(options, clock)  # its ``cond`` guards the items too
        self.items: list[Item[M, R]] = []
        self.cut: set[int] = set()  # moves a stop request kept from starting (left open)
        self.finished = 0
        self.run_started = 0.0  # when ``run`` began (the moves' ``started_after`` count from it)
        self.pool: ThreadPoolExecutor | None = None
        self.waiter: PortWaiter | None = None

    def run(
        self,
        moves: Sequence[M],
        operation: tuple[int, list[int]],
        report: Callable[[tuple[R, ...], float], P],
        *,
        canary: int = 0,
    ) -> P:
        """Run ``moves`` (journalled as ``operation``: its id and the move ids); ``report``
        makes the kind's run result; the operation is closed by what it says."""
        op_id, move_ids = operation
        started = self.run_started = self.clock.monotonic()
        self.items = [
            Item(i, m, move_id) for i, (m, move_id) in enumerate(zip(moves, move_ids, strict=True))
        ]
        try:
            self._execute(max(0, min(canary, len(self.items))))
        except BaseException:
            self.guard.journal.abandon(op_id)  # interrupted: recovery may finish it
            raise
        results = tuple(i.result for i in self.items if i.result is not None)
        run = report(results, self.clock.monotonic() - started)
        notes = close_operation(
            self.guard, op_id, unstarted=len(self.cut), ok=run.ok, counts=run.counts()
        )
        return replace(run, warnings=(*run.warnings, *notes))

    def _execute(self, canary: int) -> None:
        opts = self.opts
        self.pool = ThreadPoolExecutor(
            opts.concurrency, thread_name_prefix=f"l3ha-{self.kind.name}"
        )
        if opts.wait_ports:
            self.waiter = PortWaiter(
                self.kind.readiness, self.clock, opts.port_poll_interval, opts.port_poll_window
            )
        try:
            self._dispatch(self.items[:canary], canary=True)
            if canary:
                self._after_canary(self.items[:canary])
            self._dispatch(self.items[canary:])
        finally:
            if self.waiter is not None:
                self.waiter.close()
            self.pool.shutdown(wait=True)

    def _after_canary(self, canary: list[Item[M, R]]) -> None:
        """Once every canary move is written or finished: stop everything if the whole
        batch went wrong, else let the kind re-check the sources of the rest."""
        with self.budgets.cond:
            outcomes = [None if i.result is None else i.result.outcome for i in canary if i.started]
        later = self.items[len(canary) :]
        if outcomes and all(o in self.kind.bad for o in outcomes):
            for item in later:
                self._finish(item, self.kind.ended(item.move, "skipped", CANARY_FAILED))
            return
        self.kind.after_canary([i.move for i in later])

    # --- admission ---------------------------------------------------------------

    def _dispatch(self, items: list[Item[M, R]], *, canary: bool = False) -> None:
        """Start every item (respecting budgets); return when every move of the run has
        finished, or (``canary``) when these are written (or, as the kind says, finished)."""
        wait_for = items if canary else self.items
        until_written = canary and not self.kind.canary_until_ready
        remaining = [i for i in items if i.result is None]
        while True:
            with self.budgets.cond:
                skips = self._not_wanted(remaining)
                remaining = [i for i in remaining if i.result is None and i.index not in skips]
                settled = all(
                    i.result is not None or (until_written and i.written) for i in wait_for
                )
                if not remaining and not skips and settled:
                    return
                item = self._next_startable(remaining)
                claimed = item is not None and self.budgets.bucket.try_take()
                if item is not None and claimed:
                    remaining.remove(item)
                    item.slot = self.budgets.claim(item.move.object_id, item.move.target)
                    item.started = self.clock.monotonic()
                elif item is None and not skips:
                    self.budgets.cond.wait(timeout=0.2)
            for index, why in skips.items():
                skipped = self.items[index]
                self._finish(skipped, self.kind.ended(skipped.move, "skipped", why))
            if item is None:
                continue
            if not claimed:
                self.clock.sleep(max(self.budgets.bucket.wait_time(), 1e-3))
                continue
            assert self.pool is not None
            self.pool.submit(self._phase_one, item)

    def _not_wanted(self, remaining: list[Item[M, R]]) -> dict[int, str]:
        """Not-started moves to skip now, with why: all of them once the journal failed or a
        stop was asked; else those the kind no longer wants (none while the object is busy)."""
        if self.guard.error or self.stop():
            if not self.guard.error:
                self.cut.update(i.index for i in remaining)
            why = self.guard.why_not_started() if self.guard.error else NOT_STARTED_STOPPING
            return {i.index: why for i in remaining}
        skips: dict[int, str] = {}
        for item in remaining:
            if item.move.object_id in self.budgets.busy:
                continue
            why_not = self.kind.skip_unstarted(item, self.items)
            if why_not is not None:
                skips[item.index] = why_not
        return skips

    def _next_startable(self, remaining: list[Item[M, R]]) -> Item[M, R] | None:
        """The first move that may start now; an object's moves start in plan order."""
        held: set[str] = set()  # objects with an earlier move not startable yet
        for item in remaining:
            obj = item.move.object_id
            if obj not in held and self.budgets.has_room(obj, item.move.target):
                return item
            held.add(obj)
        return None

    # --- one move ------------------------------------------------------------------

    def _safely(self, item: Item[M, R], phase: Callable[[], T]) -> T | R:
        """Run one phase of a move; a bug is logged and fails the move, never hangs the run."""
        try:
            return phase()
        except Exception as exc:
            log.exception("%s move %d failed unexpectedly", self.kind.name, item.move_id)
            return self.kind.ended(item.move, "failed", f"unexpected error: {exc}")

    def _phase_one(self, item: Item[M, R]) -> None:
        try:
            outcome = self._safely(item, lambda: self.kind.write(item, self.items))
        finally:
            self.budgets.written()
        if not isinstance(outcome, Written):
            self._finish(item, outcome)
            return
        with self.budgets.cond:
            if item.slot is not None:  # a fallback target took it
                self.budgets.slots.transfer(item.slot, outcome.target)
                item.slot = outcome.target
            item.written = True
            item.write_seconds = self.clock.monotonic() - item.started
            self.budgets.cond.notify_all()
        if self.waiter is None:
            self._phase_two(item, outcome, Waited(True, polled=False))
            return
        self.waiter.add(
            item.move.object_id,
            item.move.kind,
            outcome.host,
            self.opts.port_timeout,
            lambda ready, waiting: self._waited(item, outcome, Waited(ready, waiting)),
        )

    def _waited(self, item: Item[M, R], written: Written, waited: Waited) -> None:
        """The poller's verdict: the target's slot is free; phase two on a worker."""
        with self.budgets.cond:
            slot, item.slot = item.slot, None
            if slot is not None:
                self.budgets.slots.release(slot)
            self.budgets.cond.notify_all()
        assert self.pool is not None
        self.pool.submit(self._phase_two, item, written, waited)

    def _phase_two(self, item: Item[M, R], written: Written, waited: Waited) -> None:
        self._finish(item, self._safely(item, lambda: self.kind.complete(item, written, waited)))

    def _finish(self, item: Item[M, R], result: R) -> None:
        """Record the outcome (journal first, outside the lock), free its budgets."""
        if item.result is not None:
            return
        now = self.clock.monotonic()
        result = replace(  # type: ignore[type-var]
            result,
            seconds=now - item.started if item.started else 0.0,
            write_seconds=item.write_seconds,
            started_after=item.started - self.run_started if item.started else 0.0,
        )
        if item.index not in self.cut:  # a move cut by a stop stays open for the next run
            self.guard.outcome(item.move_id, result.outcome.value, result.reason, result.target)
        with self.budgets.cond:
            if item.result is not None:
                return
            item.result = result
            slot, item.slot = item.slot, None
            self.finished += 1
            done = self.finished
            self.budgets.done(item.move.object_id, slot)  # ``cond`` is re-entrant
        if self.progress is not None:
            self.progress(done, len(self.items), result)
