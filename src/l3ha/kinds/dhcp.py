"""The DHCP kind: what one network move does for the dispatcher, make before break.
I/O: cloud, journal.

1. re-check the network's agents (skip it when it left the source, or when
   a source the plan saw dead or disabled is alive and enabled again);
2. journal the intent, add the network to the target, read it back; a
   target that refuses is replaced by the next fallback target;
3. (the dispatcher waits, holding no write slot, until the target's DHCP port
   is ACTIVE: ``DhcpReadiness``);
4. then remove the copy on the source, only while another live agent serves
   the network with an ACTIVE port (``DhcpWriter.remove``). A port not
   ACTIVE by ``port_timeout`` leaves the source copy in place (``pending``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from functools import cached_property

from l3ha.dhcp_model import DhcpMove, DhcpMoveKind
from l3ha.errors import L3haError
from l3ha.executor.dhcp_steps import DhcpReadiness, DhcpWriter, SkipMoveError
from l3ha.executor.outcome import BAD_DHCP_OUTCOMES, DhcpMoveResult, DhcpOutcome
from l3ha.kinds.base import Ended, Item, RechecksInPhaseOne, Waited, Written
from l3ha.model import Agent

log = logging.getLogger(__name__)

#: Fallback targets tried after the planned one refuses.
MAX_FALLBACKS = 2

DhcpItem = Item[DhcpMove, DhcpMoveResult]


@dataclass(eq=False)
class DhcpKind(RechecksInPhaseOne):
    """Networks on DHCP agents (``l3ha.kinds.base.Kind``); ``agents``: every DHCP agent
    by id, ``require_dead_source``: safety rule 5 (off for ``--force``)."""

    name = "network"
    bad = BAD_DHCP_OUTCOMES

    writer: DhcpWriter
    agents: Mapping[str, Agent]
    fallbacks: Callable[[DhcpMove], Sequence[str]] | None
    _: KW_ONLY
    require_dead_source: bool
    port_timeout: float

    @cached_property
    def readiness(self) -> DhcpReadiness:
        return DhcpReadiness(self.writer.cloud)

    def ended(self, move: DhcpMove, outcome: Ended, reason: str) -> DhcpMoveResult:
        return DhcpMoveResult(move, DhcpOutcome(outcome), reason)

    def write(self, item: DhcpItem, items: Sequence[DhcpItem]) -> DhcpMoveResult | Written:
        """Re-check, then add (where it went) or remove (finished)."""
        move = item.move
        try:
            hosts = self.writer.recheck(move, self.require_dead_source)
            if move.kind is DhcpMoveKind.REMOVE:
                where = self.writer.remove(move, item.move_id, keep=None)
                why = f"{move.reason}; served by {where}" if where else move.reason
                return DhcpMoveResult(move, DhcpOutcome.REMOVED, why)
            return self._add_somewhere(item, hosts)
        except SkipMoveError as skip:
            return self.ended(move, "skipped", str(skip))
        except L3haError as exc:
            return self.ended(move, "failed", str(exc))

    def _add_somewhere(self, item: DhcpItem, hosts: Mapping[str, Agent]) -> Written:
        """Add the network to the planned target, else to a fallback."""
        move = item.move
        candidates = [move.target or ""]
        if self.fallbacks is not None:
            candidates += [c for c in self.fallbacks(move) if c not in candidates][:MAX_FALLBACKS]
        errors: list[str] = []
        for candidate in candidates:
            agent = self.agents.get(candidate)
            if agent is None:
                continue
            try:
                self.writer.add(move, item.move_id, candidate, dict(hosts))
            except L3haError as exc:
                errors.append(f"{agent.host}: {exc}")
                continue
            return Written(agent.id, agent.host)
        raise L3haError("; ".join(errors) or "no candidate target")

    def complete(self, item: DhcpItem, written: Written, waited: Waited) -> DhcpMoveResult:
        """An added copy is done once its port is ACTIVE; a move then removes its source copy."""
        move, host = item.move, written.host
        if not waited.ready:
            why = f"DHCP port on {host} not ACTIVE after {self.port_timeout:g} s"
            return DhcpMoveResult(
                move, DhcpOutcome.PENDING, f"{why}: the source copy is kept", written.target
            )
        outcome, reason = DhcpOutcome.MOVED, f"{move.reason}; ACTIVE on {host}"
        if move.kind is DhcpMoveKind.ADD:
            outcome = DhcpOutcome.ADDED
        else:
            try:
                self.writer.remove(
                    move, item.move_id, keep=written.target, keep_port_seen=waited.polled
                )
            except SkipMoveError as skip:
                outcome, reason = DhcpOutcome.PENDING, str(skip)
            except Exception as exc:  # an API error, a bug or a journal write
                if not isinstance(exc, L3haError):
                    log.exception("removing network %s from its source failed", move.network_id)
                outcome, reason = DhcpOutcome.FAILED, f"added to {host}, but {exc}"
        return DhcpMoveResult(move, outcome, reason, written.target)
