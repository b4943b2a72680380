"""What every run of a plan shares, whatever the kind of placement: the journal as a
guard (a write that fails stops the run starting moves), the caller's stop request, and
how the run's operation is closed. I/O: journal.

The one dispatcher (``l3ha.executor.dispatch``) goes through this for every kind,
so that a journal that cannot be written, a daemon shutting down or losing
leadership, and the end of a run mean the same for every kind:

- a failed journal write is remembered; no further move starts (a move that
  cannot be journalled is not written blind) and the operation is left as it
  is, with a warning;
- once ``should_stop`` answers True no further move starts, the moves in
  flight finish, and the operation stays open in the journal (its unstarted
  moves too) so that the next run or leader finishes it;
- otherwise the operation is closed DONE or FAILED with the outcome counts;
- a real run without a journal is refused with ``BadInputError`` (``require_journal``).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Generic, TypeVar

from l3ha.errors import BadInputError
from l3ha.executor.options import ExecutorOptions
from l3ha.journal import Journal, MoveStep, OperationStatus

if TYPE_CHECKING:
    from l3ha.clock import Clock

log = logging.getLogger(__name__)

#: The reason of a move a stop request kept from starting.
NOT_STARTED_STOPPING = "not started: l3ha is stopping (shutdown or leadership lost)"


CloudT = TypeVar("CloudT")


class ExecutorBase(Generic[CloudT]):
    """What every kind's executor holds: its view of the cloud, the journal (``None``
    only for dry runs), the clock and the options."""

    def __init__(
        self,
        cloud: CloudT,
        journal: Journal | None,
        clock: Clock,
        options: ExecutorOptions | None = None,
    ) -> None:
        self.cloud = cloud
        self.journal = journal
        self.clock = clock
        self.options = options or ExecutorOptions()


def require_journal(journal: Journal | None) -> Journal:
    """The journal a real run writes; every kind refuses a run without one (bad input)."""
    if journal is None:
        raise BadInputError("the executor needs a journal unless it is a dry run")
    return journal


class JournalGuard:
    """The run's journal writes; remembers the first failure (thread-safe)."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.error = ""
        self._lock = threading.Lock()

    def failed(self, exc: BaseException) -> None:
        with self._lock:
            self.error = self.error or str(exc) or type(exc).__name__

    def step(
        self, move_id: int, step: MoveStep, *, target: str | None = None, detail: str = ""
    ) -> None:
        """Journal one step of a move; a failure is remembered and re-raised."""
        try:
            self.journal.record_step(move_id, step, target=target, detail=detail)
        except Exception as exc:
            self.failed(exc)
            raise

    def outcome(self, move_id: int, outcome: str, reason: str, target: str | None) -> None:
        """Journal a move's outcome; a failure is remembered (and logged), not raised.
        After a failure nothing more is journalled."""
        if self.error:
            return
        try:
            self.journal.record_outcome(move_id, outcome, reason, target=target)
        except Exception as exc:  # disk full, file removed: stop starting moves
            log.error("journal write failed, starting no more moves: %s", exc)
            self.failed(exc)

    def why_not_started(self) -> str:
        return f"not started: the journal cannot be written ({self.error})"


class StopRequest:
    """The caller's stop request, asked before each move starts; sticky once answered."""

    def __init__(self, should_stop: Callable[[], bool] | None) -> None:
        self._ask = should_stop or (lambda: False)
        self.stopped = False

    def __call__(self) -> bool:
        self.stopped = self.stopped or self._ask()
        return self.stopped


def close_operation(
    guard: JournalGuard,
    operation_id: int,
    *,
    unstarted: int,
    ok: bool,
    counts: Mapping[str, int],
) -> tuple[str, ...]:
    """Close the run's operation (see the module docstring); the warnings it adds."""
    if guard.error:
        return ("journal write failed: " + guard.error,)
    if unstarted:  # left open: the next run (or leader) finishes the operation
        guard.journal.abandon(operation_id)
        return (f"stopped: {unstarted} move(s) not started; the operation stays open",)
    status = OperationStatus.DONE if ok else OperationStatus.FAILED
    guard.journal.finish_operation(operation_id, status, json.dumps(dict(counts)))
    return ()
