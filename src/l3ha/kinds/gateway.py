"""The gateway kind: what one router's gateway move on OVN chassis does for the dispatcher.
I/O: cloud, journal.

1. re-check the router's chassis group (skip when the dead chassis left it or is alive
   again);
2. journal the intent, remove the dead chassis, add the replacement at the bottom of the
   group (each write read back);
3. (the dispatcher waits until the group, read again, holds the replacement:
   ``GatewayReadiness``);
4. nothing more: the replacement is a standby, so no chassis is lowered afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from l3ha.errors import L3haError
from l3ha.executor.dhcp_steps import SkipMoveError
from l3ha.executor.gateway_outcome import BAD_GATEWAY_OUTCOMES, GatewayMoveResult, GatewayOutcome
from l3ha.executor.gateway_steps import GatewayReadiness, GatewayWriter
from l3ha.kinds.base import Item, Waited, Written
from l3ha.model import Agent
from l3ha.planner.gateway import GatewayMove

GatewayItem = Item[GatewayMove, GatewayMoveResult]


class GatewayKind:
    """Router gateways on OVN gateway chassis (``l3ha.kinds.base.Kind``); ``chassis``: every
    gateway chassis by id."""

    name = "gateway"
    bad = BAD_GATEWAY_OUTCOMES

    def __init__(self, writer: GatewayWriter, chassis: Mapping[str, Agent]) -> None:
        self.writer = writer
        self.chassis = chassis
        self.readiness = GatewayReadiness(writer.ovn, {c.id: c.host for c in chassis.values()})

    def object_id(self, move: GatewayMove) -> str:
        return move.router_id

    def skipped(self, move: GatewayMove, reason: str) -> GatewayMoveResult:
        return GatewayMoveResult(move, GatewayOutcome.SKIPPED, reason)

    def failed(self, move: GatewayMove, reason: str) -> GatewayMoveResult:
        return GatewayMoveResult(move, GatewayOutcome.FAILED, reason)

    def skip_unstarted(self, item: GatewayItem, items: Sequence[GatewayItem]) -> str | None:
        return None  # each move re-checks its source itself, in phase one

    def after_canary(self, later: Sequence[GatewayMove]) -> None:
        return None

    def write(self, item: GatewayItem, items: Sequence[GatewayItem]) -> GatewayMoveResult | Written:
        """Re-check, then remove the dead chassis and add the replacement."""
        move = item.move
        try:
            group = self.writer.recheck(move)
            priority = self.writer.replace(move, item.move_id, group)
        except SkipMoveError as skip:
            return self.skipped(move, str(skip))
        except L3haError as exc:
            return self.failed(move, str(exc))
        target = self.chassis.get(move.target or "")
        if target is None or priority is None:
            return GatewayMoveResult(move, GatewayOutcome.REMOVED, move.reason)
        return Written(target.id, target.host, note=f"priority {priority}")

    def complete(self, item: GatewayItem, written: Written, waited: Waited) -> GatewayMoveResult:
        """The replacement is in the group (read back): done; nothing to lower."""
        move = item.move
        if not waited.ready:
            reason = f"{written.host} not seen in the router's group again"
            return GatewayMoveResult(move, GatewayOutcome.PENDING, reason, written.target)
        reason = f"{move.reason}; added as {written.note}" if written.note else move.reason
        return GatewayMoveResult(move, GatewayOutcome.REPLACED, reason, written.target)
