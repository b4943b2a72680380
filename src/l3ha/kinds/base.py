"""What a kind of placement supplies to the executor's one dispatcher. Pure.

The dispatcher (``l3ha.executor.dispatch``) owns everything a run of any kind
shares: admission within budgets, the journal and stop cut, the thread pool,
the readiness poller, the canary batch, finishing and counting. A kind (routers
on L3 agents, networks on DHCP agents, ...) supplies only what one of its
moves does, through the ``Kind`` protocol below: phase one (re-check, write,
read back), what to wait for, phase two, and why a move not started yet is no
longer wanted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

if TYPE_CHECKING:
    from l3ha.executor.ports import Readiness


class KindMove(Protocol):
    """A planned move of any kind: the router, network, ... it places (one move per object at
    a time), its move kind, the agent it leaves and the one it goes to."""

    @property
    def object_id(self) -> str: ...
    @property
    def kind(self) -> Any: ...
    @property
    def source(self) -> str | None: ...
    @property
    def target(self) -> str | None: ...


class KindResult(Protocol):
    """How a move of any kind ended (of the object ``object_id``): a frozen dataclass whose
    times the dispatcher fills in (``seconds`` until it finished, ``write_seconds`` until
    written, ``started_after`` the run's start)."""

    @property
    def object_id(self) -> str: ...
    @property
    def outcome(self) -> StrEnum: ...
    @property
    def reason(self) -> str: ...
    @property
    def target(self) -> str | None: ...
    @property
    def seconds(self) -> float: ...
    @property
    def write_seconds(self) -> float: ...
    @property
    def started_after(self) -> float: ...


#: The outcomes every kind has, that the dispatcher gives a move itself.
Ended = Literal["skipped", "failed"]
M = TypeVar("M", bound=KindMove)
R = TypeVar("R", bound=KindResult)


@dataclass(frozen=True, slots=True)
class Written:
    """Phase one is done: the object is on agent ``target`` (read back) at ``host``, where
    its readiness is awaited. ``attempts`` and ``note`` are for the kind's result."""

    target: str
    host: str
    attempts: int = 0
    note: str = ""


@dataclass(frozen=True, slots=True)
class Waited:
    """The readiness poller's verdict: ``ready``, else the port ids still waited for;
    ``polled`` is False when the run does not wait (``--no-wait``: taken as ready)."""

    ready: bool
    waiting: tuple[str, ...] = ()
    polled: bool = True


@dataclass
class Item(Generic[M, R]):
    """One move of a run as the dispatcher tracks it (guarded by the budgets' ``cond``)."""

    index: int
    move: M
    move_id: int = 0
    slot: str | None = None  # the target whose in-flight slot it holds
    started: float = 0.0
    written: bool = False  # phase one done and read back (readiness may still be awaited)
    write_seconds: float = 0.0  # from ``started`` until written
    result: R | None = None


class Kind(Protocol[M, R]):
    """What one kind of placement does for the dispatcher. ``items``: the run's every move in
    plan order (a kind may look at the earlier moves of the same object)."""

    # In thread names and logs ("router", "network"); the outcomes of a move gone wrong (a
    # canary batch all bad stops the run); how the poller reads and judges what a move placed;
    # whether the rest waits until the canary batch is ready (not only written).
    @property
    def name(self) -> str: ...
    @property
    def bad(self) -> frozenset[StrEnum]: ...
    @property
    def readiness(self) -> Readiness: ...
    @property
    def canary_until_ready(self) -> bool: ...

    # The result of a move not started ("skipped") or of one that raised unexpectedly ("failed").
    def ended(self, move: M, outcome: Ended, reason: str) -> R: ...

    # Why a move not started yet is no longer wanted (its source is back), else None.
    def skip_unstarted(self, item: Item[M, R], items: Sequence[Item[M, R]]) -> str | None: ...

    # The canary batch is written: re-check what the later moves depend on.
    def after_canary(self, later: Sequence[M]) -> None: ...

    # Phase one: re-check, journal, write, read back; a result when the move is over.
    def write(self, item: Item[M, R], items: Sequence[Item[M, R]]) -> R | Written: ...

    # Phase two, once readiness is known (a make-before-break move removes its source).
    def complete(self, item: Item[M, R], written: Written, waited: Waited) -> R: ...


class RechecksInPhaseOne:
    """For a kind whose every move re-checks its source itself, in phase one, and that has
    nothing to re-check after the canary batch: ``Kind``'s two hooks, doing nothing (and
    the rest starts once the canary batch is written)."""

    canary_until_ready = False

    def skip_unstarted(self, item: object, items: object) -> str | None:
        return None

    def after_canary(self, later: object) -> None:
        return None
