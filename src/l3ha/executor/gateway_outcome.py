"""How gateway moves and runs on OVN chassis ended. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from l3ha.executor.outcome import KindMoveResult, PlanRun
from l3ha.planner.gateway import GatewayMove


class GatewayOutcome(StrEnum):
    """How one gateway move ended."""

    PLANNED = "planned"  # dry run
    REPLACED = "replaced"  # the dead chassis removed, the replacement added (read back)
    REMOVED = "removed"  # the dead chassis removed; enough live chassis remain
    MOVED = "moved"  # a drain: the target raised above the source, the source lowered
    LOWERED = "lowered"  # a drain: the source (not the primary) lowered to the bottom
    PENDING = "pending"  # written, but the group did not read back as planned in time
    SKIPPED = "skipped"  # not needed or not allowed any more (see reason)
    FAILED = "failed"  # not done (the reason says what was written)


BAD_GATEWAY_OUTCOMES: frozenset[StrEnum] = frozenset({GatewayOutcome.FAILED})


@dataclass(frozen=True, slots=True)
class GatewayMoveResult(KindMoveResult[GatewayMove, GatewayOutcome]):
    """The outcome of one planned gateway move (``KindMoveResult``): ``target`` is the
    chassis added."""

    NOUN = "router"


@dataclass(frozen=True)
class GatewayRunResult(PlanRun[GatewayMoveResult, str]):
    """A gateway plan's run (``unplaced``: unused, gateway plans warn instead)."""

    OUTCOMES = GatewayOutcome
    BAD = BAD_GATEWAY_OUTCOMES

    def summary(self) -> dict[str, object]:
        return self._summary(moves=[r.as_row() for r in self.results])
