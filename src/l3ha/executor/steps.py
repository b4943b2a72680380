"""The writes of one move, step by step, with journal, fallbacks and rollback.

I/O: calls the cloud (reads and writes bindings) and the journal. The runner
(``l3ha.executor.runner``) decides *when* a move runs; this module decides
*what* it does, and always ends in a state read back from the cloud: a
router is never left without an agent silently. The cloud reads every write
back once and returns what it saw, and it has retried what was worth
retrying: nothing here reads a write back again or retries a call. Agents
(is the source back? can this target take the router?) come from the run's
shared ``AgentView``. A legacy move costs four calls: unbind, its read-back,
bind, its read-back.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import replace

from l3ha.clock import Clock
from l3ha.cloud.base import Cloud
from l3ha.errors import ApiNotFoundError, L3haError, ReadBackError
from l3ha.executor.agentview import AgentView
from l3ha.executor.candidates import why_not
from l3ha.executor.lifecycle import JournalGuard
from l3ha.executor.options import ExecutorOptions
from l3ha.executor.outcome import MoveOutcome, MoveResult
from l3ha.journal import Journal, MoveStep
from l3ha.kinds.base import Written
from l3ha.model import Agent, Binding, Move, MoveKind, Router

#: How every reason of a router left without an agent starts (operators grep for it).
NO_AGENT = "ROUTER HAS NO AGENT: "
#: Why a move of an evacuation stops: its source is usable again (rule 5).
SOURCE_BACK = "source agent is alive again and enabled"


class RouterGoneError(Exception):
    """The router was deleted while l3ha worked on it."""


class SourceWatch:
    """Sources seen usable again during an evacuation: their routers stay put.

    Usable means alive AND admin-up: a live but disabled agent has torn its
    routers down (NEUTRON.md), so its routers must still move. Thread-safe.
    When ``require_dead`` is false (drain, migrate, rebalance, ``--force``)
    a usable source is expected and nothing is ever marked.
    """

    def __init__(self, require_dead: bool) -> None:
        self.require_dead = require_dead
        self._revived: set[str] = set()
        self._lock = threading.Lock()

    def mark_revived(self, agent_id: str) -> None:
        with self._lock:
            self._revived.add(agent_id)

    def revived(self, agent_id: str | None) -> bool:
        with self._lock:
            return agent_id is not None and agent_id in self._revived


class MoveWriter:
    """Performs one move's writes; shared by all worker threads of a run.

    ``routers``: the routers as planned (by id), so that a fallback target's
    agent mode is checked against the router (a DVR router needs a
    ``dvr_snat`` agent); a router not in it is checked as a legacy router.
    """

    def __init__(
        self,
        cloud: Cloud,
        journal: Journal,
        clock: Clock,
        options: ExecutorOptions,
        sources: SourceWatch,
        *,
        routers: Mapping[str, Router] | None = None,
    ) -> None:
        self.cloud = cloud
        self.journal = journal
        self.clock = clock
        self.options = options
        self.sources = sources
        self.routers: Mapping[str, Router] = routers or {}
        self.agents = AgentView(cloud, clock, options.agent_recheck_interval)
        self.guard = JournalGuard(journal)  # remembers a failed write: no more moves start

    # --- helpers ---------------------------------------------------------

    def hosting(self, router_id: str) -> set[str]:
        """Agent ids hosting the router, read fresh (``RouterGoneError`` if it was deleted)."""
        try:
            bindings = self.cloud.router_bindings(router_id)
        except ApiNotFoundError as exc:
            raise RouterGoneError(router_id) from exc
        return {b.agent_id for b in bindings}

    def unbind(self, router_id: str, agent_id: str) -> set[str]:
        """Unbind; the hosting agents read back (``RouterGoneError`` if it was deleted)."""
        try:
            return _hosts(self.cloud.unbind(router_id, agent_id))
        except ApiNotFoundError as exc:
            raise RouterGoneError(router_id) from exc

    def agent(self, agent_id: str, *, fresh: bool = False) -> Agent | None:
        """The agent as of the run's shared view (read again first when ``fresh``: for the
        rare turns where Neutron just acted on its own), ``None`` when it does not exist."""
        if fresh:
            self.agents.refresh()
        return self.agents.get(agent_id)

    def eligible(self, agent_id: str, router_id: str) -> tuple[Agent | None, str]:
        """(agent, "") when the agent can take this router now, else (None, why not)."""
        agent = self.agent(agent_id)
        if agent is None:
            return None, f"{agent_id} does not exist"
        reason = why_not(agent, self.routers.get(router_id))
        return (None, reason) if reason else (agent, "")

    # --- source re-check (rule 5) ------------------------------------------

    def source_came_back(self, source: str | None) -> bool:
        """For evacuations: re-read the source; True (and remembered) when it is usable
        again (``ExecutorOptions.usable``: alive AND enabled, not judged dead on its current
        heartbeat; a live, disabled source still needs emptying)."""
        if not self.sources.require_dead or source is None:
            return False
        if self.sources.revived(source):
            return True
        agent = self.agent(source)
        if agent is not None and self.options.usable(agent):
            self.sources.mark_revived(agent.id)
            return True
        return False

    # --- binding with fallbacks --------------------------------------------

    def bind_somewhere(
        self, move: Move, move_id: int, candidates: list[str], first: Agent | None
    ) -> tuple[Written | None, list[str]]:
        """Bind to the first candidate that takes the router; (None, errors) if none did."""
        errors: list[str] = []
        attempts = 0
        for index, agent_id in enumerate(candidates):
            agent: Agent | None = first if index == 0 and first is not None else None
            if agent is None:
                agent, reason = self.eligible(agent_id, move.router_id)
                if agent is None:
                    errors.append(reason)
                    continue
                self.guard.step(
                    move_id,
                    MoveStep.INTENT,
                    target=agent.id,
                    detail=f"fallback target after: {errors[-1] if errors else ''}",
                )
            attempts += 1
            try:
                self.cloud.bind(move.router_id, agent.id)  # read back by the cloud
            except L3haError as exc:
                hosting = self.hosting(move.router_id)
                if agent.id not in hosting:  # else: a lost answer, the binding is there
                    errors.append(f"{agent.host}: {exc}")
                    if hosting and move.kind is not MoveKind.ADD_REPLICA:
                        break  # someone else hosted it meanwhile; do not fight over it
                    continue
            self.guard.step(move_id, MoveStep.BOUND, target=agent.id)
            self.guard.step(move_id, MoveStep.VERIFIED, target=agent.id)
            note = f"fallback after: {'; '.join(errors)}" if errors else ""
            return Written(agent.id, agent.host, attempts, note), errors
        return None, errors

    def first_eligible(
        self, move: Move, candidates: list[str]
    ) -> tuple[Agent | None, list[str], list[str]]:
        """Check candidates in order before any write: (first eligible, rest, reasons)."""
        reasons: list[str] = []
        for index, agent_id in enumerate(candidates):
            agent, reason = self.eligible(agent_id, move.router_id)
            if agent is not None:
                return agent, candidates[index:], reasons
            reasons.append(reason)
        return None, [], reasons

    # --- the move kinds ----------------------------------------------------

    def perform(self, move: Move, move_id: int, candidates: list[str]) -> MoveResult | Written:
        """Run one move; returns a final result, or ``Written`` when ports are to be awaited."""
        try:
            if move.kind is MoveKind.MOVE:
                return self._move(move, move_id, candidates)
            if move.kind is MoveKind.BIND:
                return self._bind(move, move_id, candidates)
            if move.kind is MoveKind.ADD_REPLICA:
                return self._add_replica(move, move_id, candidates)
            return self._remove_replica(move, move_id)
        except RouterGoneError:
            return MoveResult(move, MoveOutcome.SKIPPED, "the router was deleted meanwhile")

    def _move(self, move: Move, move_id: int, candidates: list[str]) -> MoveResult | Written:
        """Unbind from the source, bind to the first eligible candidate.

        No read before the unbind: it is idempotent, and its read-back shows
        where the router is. Nowhere: bind it. On another agent: Neutron (or
        someone) scheduled it there before or right after the unbind, and it
        is judged like a router Neutron schedules in the gap (``landed_elsewhere``).
        """
        if self.source_came_back(move.source):
            return MoveResult(move, MoveOutcome.SKIPPED, f"{SOURCE_BACK}; not moved")
        first, rest, reasons = self.first_eligible(move, candidates)
        if first is None:
            return MoveResult(
                move,
                MoveOutcome.FAILED,
                "no eligible target (" + "; ".join(reasons) + "); left on the source",
            )
        self.guard.step(move_id, MoveStep.INTENT, target=first.id)
        assert move.source is not None
        source = move.source
        try:
            hosting = self.unbind(move.router_id, source)
        except L3haError as exc:
            hosting = self.hosting(move.router_id)
            if source in hosting and isinstance(exc, ReadBackError):  # bound again at once
                return self.landed_elsewhere(move, move_id, hosting, [str(exc)], candidates)
            if source in hosting:
                return MoveResult(move, MoveOutcome.FAILED, f"unbind from the source failed: {exc}")
        self.guard.step(move_id, MoveStep.UNBOUND)
        if hosting:
            seen = "found there when the unbind was read back"
            return self.landed_elsewhere(move, move_id, hosting, [seen], candidates)
        written, errors = self.bind_somewhere(move, move_id, rest, first)
        if written is not None:
            return written
        return self._rollback(move, move_id, errors, candidates)

    def _rollback(
        self, move: Move, move_id: int, errors: list[str], candidates: list[str]
    ) -> MoveResult | Written:
        """No target took the router: back to its source if alive, else loudly unhosted."""
        why = "no target took the router (" + "; ".join(errors) + ")"
        hosting = self.hosting(move.router_id)
        if hosting:  # Neutron (or someone) bound it meanwhile: it is hosted
            return self.landed_elsewhere(move, move_id, hosting, errors, candidates)
        rolled = self.rollback_to_source(move, move_id)
        if rolled is not None:
            return MoveResult(
                move, MoveOutcome.ROLLED_BACK, f"{why}; re-bound to its source", target=rolled
            )
        return MoveResult(
            move,
            MoveOutcome.UNHOSTED,
            f"{NO_AGENT}{why}; the source is dead, disabled or refused it",
        )

    def landed_elsewhere(
        self,
        move: Move,
        move_id: int,
        hosting: set[str],
        errors: list[str],
        candidates: list[str],
        *,
        again: bool = True,
    ) -> MoveResult | Written:
        """The router was bound to an agent l3ha did not choose while l3ha worked on it.

        Neutron does that on its own: an agent's full resync auto-schedules unhosted
        routers to it, a router update schedules an unhosted router, both in the gap
        between l3ha's unbind and bind (whose POST then answers 409). A usable agent
        keeps it (reported MOVED there once its ports are up; an evacuation's revived
        source keeps it as SKIPPED); from an unusable one it is moved once more
        (``again``), never fought over twice.
        """
        where = sorted(hosting)
        why = "; ".join(errors) or "no error"
        agent = self.agent(where[0], fresh=True)
        if agent is not None and self.options.usable(agent):
            if agent.id == move.source:
                if self.sources.require_dead:
                    self.sources.mark_revived(agent.id)
                return MoveResult(
                    move,
                    MoveOutcome.SKIPPED,
                    f"Neutron scheduled it back to its source {agent.host} ({why}); not moved",
                    target=agent.id,
                )
            note = f"Neutron scheduled it to {agent.host} ({why})"
            self.guard.step(move_id, MoveStep.VERIFIED, target=agent.id, detail=note)
            return Written(agent.id, agent.host, 0, note)
        unusable = why_not(agent) if agent is not None else f"{where[0]} does not exist"
        grabbed = f"Neutron scheduled it to {', '.join(where)} ({why}) and {unusable}"
        if not again or move.kind is MoveKind.ADD_REPLICA or agent is None:
            return MoveResult(move, MoveOutcome.FAILED, grabbed, target=where[0])
        return self._move_off(move, move_id, agent, grabbed, candidates)

    def _move_off(
        self, move: Move, move_id: int, holder: Agent, grabbed: str, candidates: list[str]
    ) -> MoveResult | Written:
        """Move the router off the unusable agent Neutron put it on, to the planned targets."""
        first, rest, reasons = self.first_eligible(move, [c for c in candidates if c != holder.id])
        if first is None:
            reason = f"{grabbed}; no eligible target to move it on ({'; '.join(reasons)})"
            return MoveResult(move, MoveOutcome.FAILED, reason, target=holder.id)
        self.guard.step(
            move_id, MoveStep.INTENT, target=first.id, detail=f"{grabbed}; moving it on"
        )
        try:
            self.unbind(move.router_id, holder.id)
        except L3haError as exc:
            if holder.id in self.hosting(move.router_id):
                reason = f"{grabbed}; unbinding it from there failed: {exc}"
                return MoveResult(move, MoveOutcome.FAILED, reason, target=holder.id)
        self.guard.step(move_id, MoveStep.UNBOUND, detail=f"off {holder.host}")
        written, errors = self.bind_somewhere(move, move_id, rest, first)
        if written is not None:
            return replace(written, note=f"{grabbed}; moved on to {written.host}")
        hosting = self.hosting(move.router_id)
        if hosting:
            return self.landed_elsewhere(move, move_id, hosting, errors, [], again=False)
        rolled = self.rollback_to_source(move, move_id)
        if rolled is not None:
            reason = f"{grabbed}; no target took it ({'; '.join(errors)}); re-bound to its source"
            return MoveResult(move, MoveOutcome.ROLLED_BACK, reason, target=rolled)
        return MoveResult(
            move,
            MoveOutcome.UNHOSTED,
            f"{NO_AGENT}{grabbed}; then no target took it ({'; '.join(errors)})",
        )

    def rollback_to_source(self, move: Move, move_id: int) -> str | None:
        """Bind the router back to its source when that is usable; its id, or None."""
        source = self.agent(move.source) if move.source else None
        if source is None or not self.options.usable(source):
            return None
        self.guard.step(move_id, MoveStep.INTENT, target=source.id, detail="rollback to source")
        try:
            hosting = _hosts(self.cloud.bind(move.router_id, source.id))
        except L3haError:  # refused, or not readable: judged by one more read
            hosting = self.hosting(move.router_id)
        if source.id not in hosting:
            return None
        self.guard.step(
            move_id, MoveStep.VERIFIED, target=source.id, detail="rolled back to source"
        )
        return source.id

    def _bind(self, move: Move, move_id: int, candidates: list[str]) -> MoveResult | Written:
        hosting = self.hosting(move.router_id)
        if hosting:
            return MoveResult(
                move,
                MoveOutcome.SKIPPED,
                "already hosted by " + ", ".join(sorted(hosting)),
                target=sorted(hosting)[0],
            )
        return self._place(
            move,
            move_id,
            candidates,
            MoveOutcome.UNHOSTED,
            (f"{NO_AGENT}no eligible target", f"{NO_AGENT}no target took it"),
        )

    def _add_replica(self, move: Move, move_id: int, candidates: list[str]) -> MoveResult | Written:
        if self.source_came_back(move.source):
            return MoveResult(
                move, MoveOutcome.SKIPPED, f"{SOURCE_BACK}; its replica is kept, none added"
            )
        hosting = self.hosting(move.router_id)
        if move.target in hosting:
            return MoveResult(
                move, MoveOutcome.SKIPPED, "replica already on the target", target=move.target
            )
        free = [c for c in candidates if c not in hosting]
        return self._place(
            move,
            move_id,
            free,
            MoveOutcome.FAILED,
            ("no eligible agent for a new replica", "no agent took the new replica; old kept"),
        )

    def _place(
        self,
        move: Move,
        move_id: int,
        candidates: list[str],
        failure: MoveOutcome,
        messages: tuple[str, str],
    ) -> MoveResult | Written:
        """Bind to the first eligible candidate that takes the router, else ``failure``."""
        first, rest, reasons = self.first_eligible(move, candidates)
        if first is None:
            return MoveResult(move, failure, f"{messages[0]} ({'; '.join(reasons)})")
        self.guard.step(move_id, MoveStep.INTENT, target=first.id)
        written, errors = self.bind_somewhere(move, move_id, rest, first)
        if written is not None:
            return written
        if move.kind is not MoveKind.ADD_REPLICA:
            hosting = self.hosting(move.router_id)
            if hosting:  # Neutron scheduled it meanwhile (a 409 from our bind)
                return self.landed_elsewhere(move, move_id, hosting, errors, candidates)
        return MoveResult(move, failure, f"{messages[1]} ({'; '.join(errors)})")

    def _remove_replica(self, move: Move, move_id: int) -> MoveResult:
        hosting = self.hosting(move.router_id)
        source = move.source
        if source is None or source not in hosting:
            return MoveResult(move, MoveOutcome.SKIPPED, "replica already gone")
        others = hosting - {source}
        if not others:
            return MoveResult(
                move,
                MoveOutcome.FAILED,
                "refused: it is the router's only binding (make-before-break)",
            )
        if self.source_came_back(source):  # re-read right before the write
            return MoveResult(
                move,
                MoveOutcome.SKIPPED,
                f"{SOURCE_BACK}: its replica is kept next to {', '.join(sorted(others))}",
            )
        self.guard.step(move_id, MoveStep.INTENT)
        try:
            self.unbind(move.router_id, source)
        except L3haError as exc:
            if source in self.hosting(move.router_id):
                return self._replica_kept(move, exc)
        self.guard.step(move_id, MoveStep.UNBOUND)
        self.guard.step(move_id, MoveStep.VERIFIED)
        return MoveResult(move, MoveOutcome.MOVED, "replica removed")

    def _replica_kept(self, move: Move, exc: L3haError) -> MoveResult:
        """The replica is still bound after its removal: re-added by its revived agent?"""
        back = self.agent(move.source, fresh=True) if move.source else None
        if isinstance(exc, ReadBackError) and back is not None and self.options.usable(back):
            if self.sources.require_dead:  # its resync topped the router up
                self.sources.mark_revived(back.id)
            return MoveResult(
                move,
                MoveOutcome.SKIPPED,
                f"Neutron re-added the replica on {back.host}: its agent is back and "
                "resynced (auto-scheduling tops HA routers up); kept, not removed again",
                target=back.id,
            )
        if isinstance(exc, ReadBackError):
            return MoveResult(move, MoveOutcome.FAILED, "replica still bound when read back")
        return MoveResult(move, MoveOutcome.FAILED, f"removing the replica failed: {exc}")


def _hosts(bindings: list[Binding]) -> set[str]:
    return {b.agent_id for b in bindings}
