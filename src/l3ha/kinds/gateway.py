"""The gateway kind: what one router's gateway move on OVN chassis does for the dispatcher.
I/O: cloud, journal, and through what a caller gives, the data plane and OVN's northbound
database.

1. re-check the router's chassis group (skip when the source chassis left it, or, for an
   evacuation, is alive again);
2. journal the intent and write, each write read back: an evacuation removes the dead
   chassis and adds the replacement at the bottom; a drain raises the target above every
   chassis of the group (or, where the drained chassis is not the primary, only lowers it);
3. (the dispatcher waits until the group, read again, holds the target and, given the
   northbound database, until it hosts the gateway, given a probe, until the router's
   gateway answers again: ``GatewayReadiness``; with either the rest of the plan waits
   until the canary is ready, and a router still waiting at the deadline is a move gone
   wrong);
4. a drain then lowers the drained chassis to the bottom of the group; an evacuation's
   replacement is a standby, so nothing more.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum

from l3ha.errors import L3haError
from l3ha.executor.dhcp_steps import SkipMoveError
from l3ha.executor.gateway_outcome import BAD_GATEWAY_OUTCOMES, GatewayMoveResult, GatewayOutcome
from l3ha.executor.gateway_steps import GatewayReadiness, GatewayWriter
from l3ha.kinds.base import Ended, Item, RechecksInPhaseOne, Waited, Written
from l3ha.model import Agent
from l3ha.planner.gateway import GatewayMove, GatewayMoveKind

GatewayItem = Item[GatewayMove, GatewayMoveResult]


class GatewayKind(RechecksInPhaseOne):
    """Router gateways on OVN gateway chassis (``l3ha.kinds.base.Kind``); ``chassis``: every
    gateway chassis by id; ``readiness``: what a move waits for (with a probe of the data
    plane or OVN's northbound database, the canary is awaited before the rest)."""

    name = "gateway"

    def __init__(
        self, writer: GatewayWriter, chassis: Mapping[str, Agent], readiness: GatewayReadiness
    ) -> None:
        self.writer = writer
        self.chassis = chassis
        self.readiness = readiness
        self.canary_until_ready = readiness.probe is not None or readiness.hosting is not None
        checked = {GatewayOutcome.PENDING} if self.canary_until_ready else set()
        self.bad: frozenset[StrEnum] = BAD_GATEWAY_OUTCOMES | checked

    def ended(self, move: GatewayMove, outcome: Ended, reason: str) -> GatewayMoveResult:
        return GatewayMoveResult(move, GatewayOutcome(outcome), reason)

    def write(self, item: GatewayItem, items: Sequence[GatewayItem]) -> GatewayMoveResult | Written:
        """Re-check, then remove the dead chassis and add the replacement."""
        move = item.move
        try:
            group = self.writer.recheck(move)
            if move.kind is GatewayMoveKind.DEMOTE:
                lowered = self.writer.demote(move, item.move_id)
                why = f"lowered to {lowered}" if lowered is not None else "at the bottom already"
                return GatewayMoveResult(move, GatewayOutcome.LOWERED, f"{move.reason}; {why}")
            if move.kind in (GatewayMoveKind.PROMOTE, GatewayMoveKind.RAISE):
                priority: int | None = self.writer.promote(move, item.move_id, group)
            else:
                priority = self.writer.replace(move, item.move_id, group)
        except SkipMoveError as skip:
            return self.ended(move, "skipped", str(skip))
        except L3haError as exc:
            return self.ended(move, "failed", str(exc))
        target = self.chassis.get(move.target or "")
        if target is None or priority is None:
            return GatewayMoveResult(move, GatewayOutcome.REMOVED, move.reason)
        return Written(target.id, target.host, note=f"priority {priority}")

    def complete(self, item: GatewayItem, written: Written, waited: Waited) -> GatewayMoveResult:
        """The target is in the group (read back); a drain then lowers its source."""
        move = item.move
        if not waited.ready:
            reason = "; ".join(waited.waiting) or f"{written.host}: no reading in time"
            return GatewayMoveResult(move, GatewayOutcome.PENDING, reason, written.target)
        planned = written.note == f"priority {move.priority}"
        reason = move.reason if planned else f"{move.reason}; {written.target} at {written.note}"
        if move.kind is GatewayMoveKind.RAISE:  # a rebalance: the source stays, below it
            return GatewayMoveResult(move, GatewayOutcome.MOVED, reason, written.target)
        if move.kind is not GatewayMoveKind.PROMOTE:
            return GatewayMoveResult(move, GatewayOutcome.REPLACED, reason, written.target)
        try:
            self.writer.demote(move, item.move_id)
        except L3haError as exc:
            reason = f"primary moved to {written.host}, but lowering the source failed: {exc}"
            return GatewayMoveResult(move, GatewayOutcome.FAILED, reason, written.target)
        except SkipMoveError as skip:
            return GatewayMoveResult(move, GatewayOutcome.PENDING, str(skip), written.target)
        return GatewayMoveResult(move, GatewayOutcome.MOVED, reason, written.target)
