"""Finishing operations a crash interrupted, from the cloud's actual state.

I/O: reads the journal, reads bindings from the cloud, binds routers left
without an agent, records outcomes. Nothing is replayed blindly: every move
without an outcome is judged by where its router is *now*:

- on its target (or, for a removed replica, gone from its source): done;
- hosted anywhere else: left alone (reported; a new plan may move it);
- hosted nowhere: bound to the planned target if it is eligible, else to
  another eligible agent, else back to its source if that is usable (alive
  and enabled), else
  reported loudly as unhosted.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from l3ha.clock import Clock
from l3ha.cloud.base import Cloud
from l3ha.errors import L3haError
from l3ha.executor.candidates import FallbackTargets, candidate_list, snapshot_candidates
from l3ha.executor.options import ExecutorOptions
from l3ha.executor.outcome import MoveOutcome
from l3ha.executor.steps import MoveWriter, RouterGoneError, SourceWatch
from l3ha.journal import Journal, MoveRecord, MoveStep, OperationRecord, OperationStatus
from l3ha.model import Move, MoveKind


class RecoveryAction(StrEnum):
    """What recovery found or did for one interrupted move."""

    ALREADY_DONE = "already_done"  # the move had completed in the cloud
    LEFT_HOSTED = "left_hosted"  # still hosted (usually by its source): not touched
    BOUND_TARGET = "bound_target"  # was unhosted: bound to the planned target
    BOUND_OTHER = "bound_other"  # was unhosted: bound to another eligible agent
    BOUND_SOURCE = "bound_source"  # was unhosted: bound back to its (alive) source
    WOULD_BIND = "would_bind"  # dry run: unhosted, would be bound
    UNHOSTED = "unhosted"  # unhosted and no agent took it: operator needed
    GONE = "gone"  # the router was deleted


_OUTCOME = {
    RecoveryAction.ALREADY_DONE: MoveOutcome.MOVED,
    RecoveryAction.LEFT_HOSTED: MoveOutcome.SKIPPED,
    RecoveryAction.BOUND_TARGET: MoveOutcome.MOVED,
    RecoveryAction.BOUND_OTHER: MoveOutcome.MOVED,
    RecoveryAction.BOUND_SOURCE: MoveOutcome.ROLLED_BACK,
    RecoveryAction.UNHOSTED: MoveOutcome.UNHOSTED,
    RecoveryAction.GONE: MoveOutcome.SKIPPED,
}


@dataclass(frozen=True, slots=True)
class RecoveryResult:
    """One interrupted move and what recovery did about it."""

    operation_id: int
    router_id: str
    kind: str
    step: str
    action: RecoveryAction
    agent: str | None
    detail: str

    @property
    def ok(self) -> bool:
        return self.action is not RecoveryAction.UNHOSTED

    def as_row(self) -> dict[str, object]:
        return {
            "operation": self.operation_id,
            "router": self.router_id,
            "kind": self.kind,
            "step": self.step,
            "action": self.action.value,
            "agent": self.agent or "",
            "detail": self.detail,
        }


def recover(
    cloud: Cloud,
    journal: Journal,
    clock: Clock,
    *,
    options: ExecutorOptions | None = None,
    fallback_targets: FallbackTargets | None = None,
    operations: Sequence[OperationRecord] | None = None,
    dry_run: bool = False,
) -> list[RecoveryResult]:
    """Finish every unfinished operation (or the given ones); one result per open move.

    ``fallback_targets`` defaults to the eligible agents of a fresh snapshot,
    fewest routers first (read only when some router turns out unhosted).
    """
    todo = list(operations) if operations is not None else journal.unfinished_operations()
    writer = MoveWriter(cloud, journal, clock, options or ExecutorOptions(), SourceWatch(False))
    from_snapshot = functools.cache(lambda: snapshot_candidates(cloud.read_snapshot()))

    def fallbacks(move: Move) -> Sequence[str]:
        """The given fallbacks, else a snapshot's, read only the first time one is needed."""
        given = fallback_targets
        return candidate_list(move, given if given is not None else from_snapshot())

    results: list[RecoveryResult] = []
    for op in todo:
        open_moves = [m for m in journal.moves(op.id) if not m.finished]
        for record in open_moves:
            result = _recover_move(writer, fallbacks, op.id, record, dry_run)
            results.append(result)
            if not dry_run:
                journal.record_outcome(
                    record.id,
                    _OUTCOME[result.action].value,
                    f"recovered: {result.detail}",
                    target=result.agent,
                )
        if not dry_run:
            bad = any(not r.ok for r in results if r.operation_id == op.id)
            journal.finish_operation(
                op.id,
                OperationStatus.FAILED if bad else OperationStatus.RECOVERED,
                f"recovered {len(open_moves)} open moves",
            )
    return results


def _recover_move(
    writer: MoveWriter,
    fallbacks: Callable[[Move], Sequence[str]],
    op_id: int,
    record: MoveRecord,
    dry_run: bool,
) -> RecoveryResult:
    move = Move(
        record.router_id, MoveKind(record.kind), record.target, record.source, record.reason
    )

    def result(action: RecoveryAction, agent: str | None, detail: str) -> RecoveryResult:
        return RecoveryResult(
            op_id, move.router_id, move.kind.value, record.step.value, action, agent, detail
        )

    try:
        hosting = writer.hosting(move.router_id)
    except RouterGoneError:
        return result(RecoveryAction.GONE, None, "the router no longer exists")
    if move.kind is MoveKind.REMOVE_REPLICA:
        if move.source not in hosting:
            return result(RecoveryAction.ALREADY_DONE, None, "replica is gone from the source")
        return result(RecoveryAction.LEFT_HOSTED, move.source, "replica kept on the source")
    if move.target is not None and move.target in hosting:
        return result(RecoveryAction.ALREADY_DONE, move.target, "found on the target")
    if hosting:
        where = sorted(hosting)
        return result(
            RecoveryAction.LEFT_HOSTED, where[0], f"still hosted by {', '.join(where)}; not moved"
        )
    if dry_run:
        return result(RecoveryAction.WOULD_BIND, move.target, "unhosted; would be bound")
    return _bind_unhosted(writer, fallbacks, record, move, result)


def _bind_unhosted(
    writer: MoveWriter,
    fallbacks: Callable[[Move], Sequence[str]],
    record: MoveRecord,
    move: Move,
    result: Callable[[RecoveryAction, str | None, str], RecoveryResult],
) -> RecoveryResult:
    try:
        candidates = list(fallbacks(move))
    except L3haError as exc:
        candidates = [move.target] if move.target else []
        reasons = [f"no fallbacks: {exc}"]
    else:
        reasons = []
    first, rest, not_eligible = writer.first_eligible(move, candidates)
    reasons += not_eligible
    if first is not None:
        writer.guard.step(record.id, MoveStep.INTENT, target=first.id, detail="recovery")
        written, errors = writer.bind_somewhere(move, record.id, rest, first)
        reasons += errors
        if written is not None:
            action = (
                RecoveryAction.BOUND_TARGET
                if written.target == move.target
                else RecoveryAction.BOUND_OTHER
            )
            return result(action, written.target, f"was unhosted; bound to {written.host}")
    rolled = writer.rollback_to_source(move, record.id)
    if rolled is not None:
        return result(RecoveryAction.BOUND_SOURCE, rolled, "was unhosted; bound back to source")
    return result(
        RecoveryAction.UNHOSTED,
        None,
        "ROUTER HAS NO AGENT: " + ("; ".join(reasons) or "no eligible agent"),
    )
