"""The router kind: what one router move does for the dispatcher. I/O: cloud, journal.

The writes themselves are ``l3ha.executor.steps`` (with fallbacks and rollback);
a move that ends with an unexpected error or with its router on no agent goes
through ``l3ha.executor.salvage`` before it is reported. A REMOVE_REPLICA runs
only after the same router's ADD_REPLICA is read back. In an evacuation (and
repairs) a move not started yet is skipped once its source is usable again
(alive AND enabled); the sources are re-read after the canary batch.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from l3ha.executor.candidates import FallbackTargets, candidate_list
from l3ha.executor.outcome import BAD_OUTCOMES, MoveOutcome, MoveResult
from l3ha.executor.ports import RouterReadiness
from l3ha.executor.salvage import salvage
from l3ha.executor.steps import NO_AGENT, SOURCE_BACK, MoveWriter
from l3ha.kinds.base import Ended, Item, Waited, Written
from l3ha.model import Move, MoveKind

log = logging.getLogger(__name__)

#: Move kinds that are skipped once their source is usable again.
_SOURCE_CHECKED = frozenset({MoveKind.MOVE, MoveKind.ADD_REPLICA, MoveKind.REMOVE_REPLICA})
#: Outcomes after which a later REMOVE_REPLICA of the same router may run.
_ADD_CONFIRMED = frozenset({MoveOutcome.MOVED, MoveOutcome.PENDING, MoveOutcome.SKIPPED})

RouterItem = Item[Move, MoveResult]


class RouterKind:
    """Routers on L3 agents (``l3ha.kinds.base.Kind``)."""

    name = "router"
    bad = BAD_OUTCOMES
    canary_until_ready = False

    def __init__(
        self, writer: MoveWriter, fallbacks: FallbackTargets | None, port_timeout: float
    ) -> None:
        self.writer = writer
        self.fallbacks = fallbacks
        self.port_timeout = port_timeout
        self.readiness = RouterReadiness(writer.cloud)

    def ended(self, move: Move, outcome: Ended, reason: str) -> MoveResult:
        return MoveResult(move, MoveOutcome(outcome), reason)

    def skip_unstarted(self, item: RouterItem, items: Sequence[RouterItem]) -> str | None:
        move = item.move
        if move.kind not in _SOURCE_CHECKED or not self.writer.sources.revived(move.source):
            return None
        if move.kind is MoveKind.MOVE:
            return f"{SOURCE_BACK}; not moved"
        if move.kind is MoveKind.ADD_REPLICA:
            return f"{SOURCE_BACK}; its replica is kept, none added"
        added = [
            e.result.target or e.move.target or "?"
            for e in _earlier(item, items)
            if e.move.kind is MoveKind.ADD_REPLICA
            and e.result is not None
            and e.result.outcome in (MoveOutcome.MOVED, MoveOutcome.PENDING)
        ]
        if added:
            return f"{SOURCE_BACK}: its replica is kept next to the new one on {', '.join(added)}"
        return f"{SOURCE_BACK}; its replica is kept"

    def after_canary(self, later: Sequence[Move]) -> None:
        sources = sorted({m.source for m in later if m.source})
        if sources and self.writer.sources.require_dead:
            self.writer.agents.refresh()  # one read of every agent, now
        for source in sources:
            self.writer.source_came_back(source)

    def write(self, item: RouterItem, items: Sequence[RouterItem]) -> MoveResult | Written:
        move = item.move
        error: object = None  # why the router may be dark now (then it is salvaged)
        candidates = candidate_list(move, self.fallbacks)
        try:
            outcome = _blocked_by_earlier(item, items) or self.writer.perform(
                move, item.move_id, candidates
            )
            if isinstance(outcome, MoveResult) and outcome.outcome is MoveOutcome.UNHOSTED:
                error = outcome.reason.removeprefix(NO_AGENT)
        except Exception as exc:  # a bug or an unexpected error: never leave it silent
            log.exception("move of router %s failed unexpectedly", move.router_id)
            error = exc
        if error is not None:  # read the router back, re-bind it if it has no agent
            outcome = salvage(self.writer, move, item.move_id, candidates, error)
        if isinstance(outcome, MoveResult) and outcome.outcome is MoveOutcome.UNHOSTED:
            log.error("router %s has NO agent: %s", move.router_id, outcome.reason)
        return outcome

    def complete(self, item: RouterItem, written: Written, waited: Waited) -> MoveResult:
        if waited.ready:
            reason = written.note or item.move.reason
            return MoveResult(
                item.move, MoveOutcome.MOVED, reason, written.target, attempts=written.attempts
            )
        ports = ", ".join(waited.waiting) or "no port yet"
        return MoveResult(
            item.move,
            MoveOutcome.PENDING,
            f"bound, but ports not ACTIVE after {self.port_timeout:g}s: {ports}",
            written.target,
            pending_ports=waited.waiting,
            attempts=written.attempts,
        )


def _earlier(item: RouterItem, items: Sequence[RouterItem]) -> list[RouterItem]:
    """The same router's moves before this one, in plan order."""
    return [e for e in items[: item.index] if e.move.router_id == item.move.router_id]


def _blocked_by_earlier(item: RouterItem, items: Sequence[RouterItem]) -> MoveResult | None:
    """REMOVE_REPLICA runs only after the same router's ADD_REPLICA is read back."""
    if item.move.kind is not MoveKind.REMOVE_REPLICA:
        return None
    for earlier in _earlier(item, items):
        if earlier.move.kind is MoveKind.ADD_REPLICA and (
            earlier.result is None or earlier.result.outcome not in _ADD_CONFIRMED
        ):
            return MoveResult(
                item.move,
                MoveOutcome.SKIPPED,
                "the replacement replica was not added; old replica kept",
            )
    return None
