"""The DHCP executor: runs a DHCP plan make before break. I/O: cloud, journal, threads.

The one place that changes Neutron's DHCP scheduling. For each move, in plan
order, within the same budgets as router moves (``ExecutorOptions``: at most
``concurrency`` writing at once, ``per_target_inflight`` networks per target
not yet ACTIVE, a token bucket of moves started per second):

1. re-check the network's agents (skip it when it left the source, or when
   a source the plan saw dead or disabled is alive and enabled again);
2. journal the intent, add the network to the target, read it back;
3. wait (holding no write slot) until the target's DHCP port is ACTIVE — the
   port waiter every kind shares (``l3ha.executor.ports``) asks for the ports
   of every waiting network in a few batched requests;
4. then remove the copy on the source, only while another live agent serves
   the network with an ACTIVE port (``DhcpWriter.remove``).

A target that refuses the add is replaced by the next fallback target. A
port not ACTIVE by ``port_timeout`` leaves the source copy in place
(``pending``). Dry run writes nothing and reports the plan. A journal that
cannot be written and a stop request (``should_stop``, asked before each move
starts) end the run as for routers (``l3ha.executor.lifecycle``): no further
move starts, the moves in flight finish; after a stop the operation stays
open for the next run or leader.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from enum import StrEnum

from l3ha.cloud.dhcp_base import DhcpCloud
from l3ha.dhcp_model import DhcpMove, DhcpMoveKind, DhcpPlan, DhcpUnplaceable
from l3ha.errors import L3haError
from l3ha.executor.dhcp_steps import DhcpReadiness, DhcpWriter, SkipMoveError, journal_move
from l3ha.executor.lifecycle import (
    NOT_STARTED_STOPPING,
    ExecutorBase,
    JournalGuard,
    StopRequest,
    close_operation,
    require_journal,
)
from l3ha.executor.outcome import PlanRun
from l3ha.executor.ports import PortWaiter
from l3ha.executor.ratelimit import RunBudgets
from l3ha.journal import ObjectKind
from l3ha.model import Agent

log = logging.getLogger(__name__)

#: Fallback targets tried after the planned one refuses.
MAX_FALLBACKS = 2


class DhcpOutcome(StrEnum):
    """How one DHCP move ended."""

    PLANNED = "planned"  # dry run
    MOVED = "moved"  # on the target with an ACTIVE port, removed from the source
    ADDED = "added"  # one more copy, its port ACTIVE
    REMOVED = "removed"  # a copy removed (another live agent serves the network)
    PENDING = "pending"  # added, port not ACTIVE in time: the source copy is kept (warning)
    SKIPPED = "skipped"  # not needed or not allowed any more (see reason)
    FAILED = "failed"  # not done; the network keeps the copies it had


BAD_DHCP_OUTCOMES: frozenset[StrEnum] = frozenset({DhcpOutcome.FAILED})


@dataclass(frozen=True, slots=True)
class DhcpMoveResult:
    """The outcome of one planned DHCP move; ``target`` is where the copy went."""

    move: DhcpMove
    outcome: DhcpOutcome
    reason: str = ""
    target: str | None = None
    seconds: float = 0.0

    @property
    def object_id(self) -> str:
        return self.move.network_id

    def as_row(self) -> dict[str, object]:
        return {
            "network": self.move.network_id,
            "kind": self.move.kind.value,
            "source": self.move.source or "",
            "target": self.target or self.move.target or "",
            "outcome": self.outcome.value,
            "reason": self.reason,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class DhcpRunResult(PlanRun[DhcpMoveResult, DhcpUnplaceable]):
    """A DHCP plan's run (``PlanRun``): not ``ok`` when a move failed."""

    OUTCOMES = DhcpOutcome
    BAD = BAD_DHCP_OUTCOMES

    def summary(self) -> dict[str, object]:
        return {
            "action": self.action,
            "operation": self.operation_id,
            "dry_run": self.dry_run,
            "seconds": round(self.seconds, 3),
            "counts": self.counts(),
            "moves": [r.as_row() for r in self.results],
            "unplaced": [{"network": u.network_id, "reason": u.reason} for u in self.unplaced],
            "warnings": list(self.warnings),
        }


@dataclass
class _Run:
    """State shared by the dispatcher, the workers and the port waiter; guarded by
    ``budgets.cond`` (the budgets every kind shares, ``RunBudgets``)."""

    moves: Sequence[DhcpMove]
    move_ids: list[int]
    results: list[DhcpMoveResult | None]
    budgets: RunBudgets
    open_count: int = 0
    unstarted: set[int] = field(default_factory=set)  # kept from starting by a stop request


class DhcpExecutor(ExecutorBase[DhcpCloud]):
    """Runs DHCP plans; see the module docstring."""

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
        started = self.clock.monotonic()
        op_id, move_ids = journal.begin_operation(
            plan.action,
            dict(args or {}),
            [journal_move(m) for m in plan.moves],
            ObjectKind.NETWORK,
        )
        budgets = RunBudgets(self.options, self.clock)
        state = _Run(plan.moves, move_ids, [None] * len(plan.moves), budgets)
        guard = JournalGuard(journal)
        try:
            self._execute(
                state,
                guard,
                agents,
                fallbacks,
                require_dead_source=require_dead_source,
                should_stop=should_stop,
            )
        except BaseException:
            journal.abandon(op_id)
            raise
        results = tuple(r for r in state.results if r is not None)
        seconds = self.clock.monotonic() - started
        run = DhcpRunResult(plan.action, results, op_id, seconds=seconds, unplaced=plan.unplaceable)
        notes = close_operation(
            guard, op_id, unstarted=len(state.unstarted), ok=run.ok, counts=run.counts()
        )
        return replace(run, warnings=(*plan.warnings, *notes))

    # --- dispatching ------------------------------------------------------------

    def _execute(
        self,
        state: _Run,
        guard: JournalGuard,
        agents: Mapping[str, Agent],
        fallbacks: Callable[[DhcpMove], Sequence[str]] | None,
        *,
        require_dead_source: bool,
        should_stop: Callable[[], bool] | None,
    ) -> None:
        writer = DhcpWriter(self.cloud, guard)
        work = _Work(
            self, writer, state, agents, fallbacks, require_dead_source=require_dead_source
        )
        stop = StopRequest(should_stop)
        opts = self.options
        work.waiter = PortWaiter(
            DhcpReadiness(self.cloud), self.clock, opts.port_poll_interval, opts.port_poll_window
        )
        try:
            self._dispatch(state, work, guard, stop)
        finally:
            work.waiter.close()

    def _dispatch(self, state: _Run, work: _Work, guard: JournalGuard, stop: StopRequest) -> None:
        with ThreadPoolExecutor(self.options.concurrency, thread_name_prefix="l3ha-dhcp") as pool:
            work.pool = pool
            for index, move in enumerate(state.moves):
                if not self._admit(state, move, lambda: not guard.error and not stop()):
                    why = guard.why_not_started() if guard.error else NOT_STARTED_STOPPING
                    if not guard.error:
                        state.unstarted.add(index)
                    work.finish(index, DhcpOutcome.SKIPPED, why)
                    continue
                state.budgets.bucket.take()
                pool.submit(work.start, index)
            work.wait_all()

    def _admit(self, state: _Run, move: DhcpMove, may_start: Callable[[], bool]) -> bool:
        """Wait until a write slot is free, the move's target has room and its network has
        no earlier move running; False (nothing taken) once ``may_start`` says no."""
        budgets = state.budgets
        with budgets.cond:
            while not budgets.has_room(move.network_id, move.target):
                if not may_start():
                    return False
                budgets.cond.wait(timeout=0.2)
            if not may_start():
                return False
            state.open_count += 1
            budgets.claim(move.network_id, move.target)
            return True


class _Work:
    """What the workers and the port waiter's callbacks of one run do."""

    def __init__(
        self,
        executor: DhcpExecutor,
        writer: DhcpWriter,
        state: _Run,
        agents: Mapping[str, Agent],
        fallbacks: Callable[[DhcpMove], Sequence[str]] | None,
        *,
        require_dead_source: bool,
    ) -> None:
        self.ex = executor
        self.writer = writer
        self.state = state
        self.agents = agents
        self.fallbacks = fallbacks
        self.require_dead_source = require_dead_source
        self.pool: ThreadPoolExecutor | None = None
        self.waiter: PortWaiter | None = None
        self.started: dict[int, float] = {}

    def start(self, index: int) -> None:
        """Phase one of a move (re-check, add) or a whole removal; never raises."""
        self.started[index] = self.ex.clock.monotonic()
        try:
            target = self._first_phase(index)
        finally:
            self.state.budgets.written()
        if target is None:
            return
        move = self.state.moves[index]
        if not self.ex.options.wait_ports or self.waiter is None:
            self._ports_ready(index, target, port_seen=False)
            return
        self.waiter.add(
            move.network_id,
            move.kind,
            target.host,
            self.ex.options.port_timeout,
            lambda ready, _waiting: self._waited(index, target, ready),
        )

    def _first_phase(self, index: int) -> Agent | None:
        """Re-check, then add (the agent it went to) or remove (finished: None)."""
        move = self.state.moves[index]
        try:
            hosts = self.writer.recheck(move, self.require_dead_source)
            if move.kind is DhcpMoveKind.REMOVE:
                where = self.writer.remove(move, self.state.move_ids[index], keep=None)
                self.finish(index, DhcpOutcome.REMOVED, f"{move.reason}; served by {where}")
                return None
            return self._add_somewhere(index, move, hosts)
        except SkipMoveError as skip:
            self.finish(index, DhcpOutcome.SKIPPED, str(skip))
        except L3haError as exc:
            self.finish(index, DhcpOutcome.FAILED, str(exc))
        except Exception as exc:  # a bug or a journal write: never hang the run
            log.exception("DHCP move of network %s failed unexpectedly", move.network_id)
            self.finish(index, DhcpOutcome.FAILED, f"unexpected error: {exc}")
        return None

    def _add_somewhere(self, index: int, move: DhcpMove, hosts: Mapping[str, Agent]) -> Agent:
        """Add the network to the planned target, else to a fallback; the agent it went to."""
        candidates = [move.target or ""]
        if self.fallbacks is not None:
            candidates += [c for c in self.fallbacks(move) if c not in candidates][:MAX_FALLBACKS]
        errors: list[str] = []
        for candidate in candidates:
            agent = self.agents.get(candidate)
            if agent is None:
                continue
            try:
                self.writer.add(move, self.state.move_ids[index], candidate, dict(hosts))
            except L3haError as exc:
                errors.append(f"{agent.host}: {exc}")
                continue
            if candidate != move.target and move.target is not None:
                self.state.budgets.slots.transfer(move.target, candidate)
            return agent
        raise _AddFailedError("; ".join(errors) or "no candidate target")

    def _waited(self, index: int, target: Agent, ready: bool) -> None:
        """The port waiter's verdict on the target's DHCP port."""
        if ready:
            self._ports_ready(index, target, port_seen=True)
            return
        self._release(target.id)
        self.finish(
            index,
            DhcpOutcome.PENDING,
            f"DHCP port on {target.host} not ACTIVE after "
            f"{self.ex.options.port_timeout:g} s: the source copy is kept",
            target.id,
            release_target=False,
        )

    def _ports_ready(self, index: int, target: Agent, *, port_seen: bool) -> None:
        """The new copy serves (or is not waited for): an added copy is done, a move
        removes its source copy (on a worker)."""
        self._release(target.id)
        move = self.state.moves[index]
        if move.kind is DhcpMoveKind.ADD:
            self.finish(
                index,
                DhcpOutcome.ADDED,
                f"{move.reason}; ACTIVE on {target.host}",
                target.id,
                release_target=False,
            )
            return
        if self.pool is not None:
            self.pool.submit(self._remove_source, index, target, port_seen)
        else:
            self._remove_source(index, target, port_seen)

    def _remove_source(self, index: int, target: Agent, port_seen: bool) -> None:
        move = self.state.moves[index]
        try:
            self.writer.remove(
                move, self.state.move_ids[index], keep=target.id, keep_port_seen=port_seen
            )
        except SkipMoveError as skip:
            outcome, reason = DhcpOutcome.PENDING, str(skip)
        except L3haError as exc:
            outcome, reason = DhcpOutcome.FAILED, f"added to {target.host}, but {exc}"
        except Exception as exc:  # a bug or a journal write: never hang the run
            log.exception("removing network %s from its source failed", move.network_id)
            outcome, reason = DhcpOutcome.FAILED, f"added to {target.host}, but {exc}"
        else:
            outcome, reason = DhcpOutcome.MOVED, f"{move.reason}; ACTIVE on {target.host}"
        self.finish(index, outcome, reason, target.id, release_target=False)

    def _release(self, target: str) -> None:
        budgets = self.state.budgets
        with budgets.cond:
            budgets.slots.release(target)
            budgets.cond.notify_all()

    def finish(
        self,
        index: int,
        outcome: DhcpOutcome,
        reason: str,
        target: str | None = None,
        *,
        release_target: bool = True,
    ) -> None:
        """Record one move's outcome (journal and result) and free what it held."""
        move = self.state.moves[index]
        seconds = self.ex.clock.monotonic() - self.started.get(index, self.ex.clock.monotonic())
        slot = move.target if release_target and index in self.started else None
        if index not in self.state.unstarted:  # left open for the next run
            self.writer.guard.outcome(self.state.move_ids[index], outcome.value, reason, target)
        result = DhcpMoveResult(move, outcome, reason, target, seconds)
        with self.state.budgets.cond:
            self.state.results[index] = result
            if index in self.started:
                self.state.open_count -= 1
            self.state.budgets.done(move.network_id, slot)

    def wait_all(self) -> None:
        """Block until every started move has an outcome."""
        with self.state.budgets.cond:
            while self.state.open_count > 0:
                self.state.budgets.cond.wait(timeout=0.5)


class _AddFailedError(L3haError):
    """No target took the network (the reasons of each)."""
