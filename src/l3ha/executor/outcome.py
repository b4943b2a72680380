"""What the executor reports: per-move outcomes, a run result and its summary. Pure."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Generic, TypeVar

from l3ha.dhcp_model import DhcpMove, DhcpUnplaceable
from l3ha.kinds.base import KindMove, KindResult
from l3ha.model import Move, Unplaceable


class MoveOutcome(StrEnum):
    """How one move ended."""

    PLANNED = "planned"  # dry run: nothing was written
    MOVED = "moved"  # bound on the target (ports ACTIVE unless --no-wait)
    PENDING = "pending"  # bound, but ports not ACTIVE by the timeout: a warning
    FAILED = "failed"  # not done; the router is still hosted (see reason)
    SKIPPED = "skipped"  # not needed or not allowed any more (source back, already in place)
    UNHOSTED = "unhosted"  # the router has no agent: needs an operator NOW
    ROLLED_BACK = "rolled_back"  # no target took it; re-bound to its source


#: Outcomes that make an action command exit 1.
BAD_OUTCOMES: frozenset[StrEnum] = frozenset(
    {MoveOutcome.FAILED, MoveOutcome.UNHOSTED, MoveOutcome.ROLLED_BACK}
)
#: The count key of routers the plan could not place (they have no move, so no MoveOutcome).
UNPLACED = "unplaced"


MoveT = TypeVar("MoveT", bound=KindMove)
OutcomeT = TypeVar("OutcomeT", bound=StrEnum)


@dataclass(frozen=True, slots=True)
class KindMoveResult(Generic[MoveT, OutcomeT]):
    """The outcome of one planned move of any kind; ``target`` is where its object ended
    up. A kind names its object (``NOUN``, the key of ``as_row``).

    ``seconds``: from the move's start until it finished (ports ACTIVE when waited
    for); ``write_seconds``: from its start until its writes were read back (0 if
    never written); ``started_after``: from the run's start until the move started.
    """

    NOUN: ClassVar[str]

    move: MoveT
    outcome: OutcomeT
    reason: str = ""
    target: str | None = None
    seconds: float = 0.0
    write_seconds: float = 0.0
    started_after: float = 0.0

    @property
    def object_id(self) -> str:
        return self.move.object_id

    def as_row(self) -> dict[str, object]:
        """A flat dict for tables and JSON."""
        return _row(self, self.NOUN)


@dataclass(frozen=True, slots=True)
class MoveResult(KindMoveResult[Move, MoveOutcome]):
    """The outcome of one planned router move (``KindMoveResult``): the ports still not
    ACTIVE when it ended, the targets tried."""

    NOUN = "router"

    pending_ports: tuple[str, ...] = ()
    attempts: int = 0

    @property
    def router_id(self) -> str:
        return self.move.router_id

    def as_row(self) -> dict[str, object]:
        return _row(self, self.NOUN, pending_ports=list(self.pending_ports))


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
class DhcpMoveResult(KindMoveResult[DhcpMove, DhcpOutcome]):
    """The outcome of one planned DHCP move (``KindMoveResult``)."""

    NOUN = "network"


def _row(result: KindMoveResult[Any, Any], name: str, **extra: object) -> dict[str, object]:
    """One move's result as a flat dict; its object under ``name``, ``extra`` before seconds."""
    move = result.move
    return {
        name: result.object_id,
        "kind": move.kind.value,
        "source": move.source or "",
        "target": result.target or move.target or "",
        "outcome": result.outcome.value,
        "reason": result.reason,
        **extra,
        "seconds": round(result.seconds, 3),
    }


R = TypeVar("R", bound=KindResult)
U = TypeVar("U")


@dataclass(frozen=True)
class PlanRun(Generic[R, U]):
    """What running one plan gave, for every kind of placement: each move's result in
    plan order, the journal's operation id, the objects the plan could not place.

    A kind names its outcomes (``OUTCOMES``) and those that make a run not ``ok``
    (``BAD``); an unplaced object does too (exit code 1).
    """

    OUTCOMES: ClassVar[type[StrEnum]]
    BAD: ClassVar[frozenset[StrEnum]]

    action: str
    results: tuple[R, ...]
    operation_id: int | None = None
    dry_run: bool = False
    warnings: tuple[str, ...] = field(default_factory=tuple)
    seconds: float = 0.0
    unplaced: tuple[U, ...] = field(default_factory=tuple)

    def counts(self) -> dict[str, int]:
        """Objects per outcome (every outcome listed, zeros included), plus ``unplaced``: an
        object moved twice (a router whose HA replica was replaced) counts once."""
        pairs = {(r.outcome, r.object_id) for r in self.results}
        counted = Counter(outcome for outcome, _ in pairs)
        counts = {o.value: counted.get(o, 0) for o in self.OUTCOMES}
        counts[UNPLACED] = len(self.unplaced)
        return counts

    @property
    def ok(self) -> bool:
        """No move ended badly; nothing unplaced."""
        return not self.unplaced and not any(r.outcome in self.BAD for r in self.results)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def _summary(self, **details: object) -> dict[str, object]:
        """The summary every kind shares around ``details`` (what its operator must read)."""
        head: dict[str, object] = {
            "action": self.action,
            "operation": self.operation_id,
            "dry_run": self.dry_run,
        }
        head |= {"seconds": round(self.seconds, 3), "counts": self.counts()}
        return head | details | {"warnings": list(self.warnings)}


@dataclass(frozen=True)
class RunResult(PlanRun[MoveResult, Unplaceable]):
    """A router plan's run. ``unplaced``: routers the plan could not place, with the
    planner's reason; they were not moved (an evacuated one stays on its dead agent).
    Not ``ok`` when a move failed, rolled back or left a router unhosted."""

    OUTCOMES = MoveOutcome
    BAD = BAD_OUTCOMES

    def with_outcome(self, outcome: MoveOutcome) -> tuple[MoveResult, ...]:
        return tuple(r for r in self.results if r.outcome is outcome)

    def summary(self) -> dict[str, object]:
        """Counts plus the details an operator must read (failed, pending, unhosted, unplaced)."""
        return self._summary(
            failed=[_brief(r) for r in self.results if r.outcome in BAD_OUTCOMES],
            pending=[
                {"router": r.router_id, "target": r.target, "ports": list(r.pending_ports)}
                for r in self.with_outcome(MoveOutcome.PENDING)
            ],
            skipped=[_brief(r) for r in self.with_outcome(MoveOutcome.SKIPPED)],
            unhosted=[r.router_id for r in self.with_outcome(MoveOutcome.UNHOSTED)],
            unplaced=[{"router": u.router_id, "reason": u.reason} for u in self.unplaced],
        )

    def summary_rows(self) -> list[dict[str, object]]:
        """One row per outcome with its count (``unplaced`` included), for the summary table."""
        return [{"outcome": k, "routers": v} for k, v in self.counts().items() if v]


@dataclass(frozen=True)
class DhcpRunResult(PlanRun[DhcpMoveResult, DhcpUnplaceable]):
    """A DHCP plan's run (``PlanRun``): not ``ok`` when a move failed."""

    OUTCOMES = DhcpOutcome
    BAD = BAD_DHCP_OUTCOMES

    def summary(self) -> dict[str, object]:
        return self._summary(
            moves=[r.as_row() for r in self.results],
            unplaced=[{"network": u.network_id, "reason": u.reason} for u in self.unplaced],
        )


def _brief(result: MoveResult) -> dict[str, object]:
    return {"router": result.router_id, "outcome": result.outcome.value, "reason": result.reason}


@dataclass(frozen=True, slots=True)
class Progress:
    """Handed to the progress callback after each move finishes."""

    done: int
    total: int
    last: MoveResult
