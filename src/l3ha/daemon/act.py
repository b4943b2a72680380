"""The daemon's hands: run one cycle's decisions through the operations layer. I/O: cloud, journal.

Each decision becomes an ``ActionRequest`` (targets limited to the agents
l3ha judges alive, the cycle's remaining move budget, ``by=watch`` in the
journal) run by ``l3ha.operations.run_action`` over a context whose world is
the daemon's own (``decide.overlay``). Between two decisions the bindings of
the agents the first one touched are read again, so the second plans on the
loads the first left. A refusal by an operation's own gate is reported, not
raised; so is a cloud error (the next cycle tries again).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from l3ha.daemon.decide import Decision, overlay, targets
from l3ha.daemon.logevents import event, host_names, named
from l3ha.daemon.world import WorldCache
from l3ha.errors import L3haError, SafetyHaltError
from l3ha.executor import MoveOutcome, MoveResult
from l3ha.health import Verdict
from l3ha.model import Snapshot
from l3ha.operations import (
    Action,
    ActionRequest,
    ActionResult,
    Executed,
    OperationContext,
    run_action,
)

#: Outcomes that did not start a move (they cost no budget).
_NOT_STARTED = frozenset({MoveOutcome.SKIPPED, MoveOutcome.PLANNED})


@dataclass(frozen=True)
class Acted:
    """What one cycle's actions did."""

    results: tuple[tuple[Decision, ActionResult], ...] = ()
    refusals: tuple[tuple[Decision, str], ...] = ()
    errors: tuple[tuple[Decision, str], ...] = ()
    moves_started: int = 0

    @property
    def failed(self) -> bool:
        return bool(self.errors) or any(r.exit_code for _, r in self.results)


class Hands:
    """Runs decisions (see the module docstring)."""

    def __init__(
        self,
        ctx: OperationContext,
        world: WorldCache,
        base: ActionRequest,
        read_with_ha_state: Callable[[], Snapshot],
    ) -> None:
        self.ctx = ctx
        self.world = world
        self.base = base
        self.read_with_ha_state = read_with_ha_state

    def act(
        self,
        decisions: list[Decision],
        verdict_of: Mapping[str, Verdict],
        budget: int,
        acted: Acted | None = None,
    ) -> Acted:
        """Run the decisions in order while the budget lasts (adding to ``acted``)."""
        acted = acted or Acted()
        for decision in decisions:
            remaining = budget - acted.moves_started
            if remaining <= 0:
                event("budget_exhausted", logging.WARNING, **self._about(decision))
                break
            acted = self._one(decision, verdict_of, remaining, acted)
        return acted

    def _one(
        self, decision: Decision, verdict_of: Mapping[str, Verdict], budget: int, acted: Acted
    ) -> Acted:
        request = self._request(decision, verdict_of, budget)
        ctx = replace(self.ctx, observer=lambda ha: self._world(ha, verdict_of))
        event("action", **self._about(decision), reason=decision.reason)
        try:
            result = run_action(ctx, request)
        except SafetyHaltError as exc:
            event("refused", logging.WARNING, **self._about(decision), reason=str(exc))
            return replace(acted, refusals=(*acted.refusals, (decision, str(exc))))
        except L3haError as exc:
            event("action_error", logging.ERROR, **self._about(decision), error=str(exc))
            self.world.force_full = True
            return replace(acted, errors=(*acted.errors, (decision, str(exc))))
        started = self._report(decision, result)
        self.world.reread(_touched(result))
        return replace(
            acted,
            results=(*acted.results, (decision, result)),
            moves_started=acted.moves_started + started,
        )

    def _about(self, decision: Decision) -> dict[str, object]:
        """An action event's fields: the action, its agent's id and host."""
        hosts = host_names(self.world.snapshot)
        return {"action": decision.action.value, **named("agent", decision.agent, hosts)}

    def _request(
        self, decision: Decision, verdict_of: Mapping[str, Verdict], budget: int
    ) -> ActionRequest:
        return replace(
            self.base,
            action=decision.action,
            agent=decision.agent,
            placement=replace(self.base.placement, to=targets(verdict_of)),
            move_budget=budget,
            max_moves=budget if decision.action is Action.REBALANCE else None,
            journal_args=(("by", "watch"), ("reason", decision.reason)),
        )

    def _world(self, with_ha_state: bool, verdict_of: Mapping[str, Verdict]) -> Snapshot:
        snapshot = self.read_with_ha_state() if with_ha_state else self.world.snapshot
        if snapshot is None:
            snapshot = self.world.full_read()
        return overlay(snapshot, verdict_of)

    def _report(self, decision: Decision, result: ActionResult) -> int:
        started = 0
        for step in result.steps:
            if not isinstance(step, Executed):
                continue
            for move in step.run.results:
                if move.outcome not in _NOT_STARTED:
                    started += 1
                _log_move(decision, move, step.snapshot)
        return started


def _log_move(decision: Decision, move: MoveResult, snapshot: Snapshot) -> None:
    """One ``move`` event: the ids, and the router's name and the agents' hosts beside them."""
    router = snapshot.routers_by_id.get(move.router_id)
    hosts = host_names(snapshot)
    event(
        "move",
        action=decision.action.value,
        **named("router", move.router_id, {move.router_id: router.name} if router else {}, "name"),
        kind=move.move.kind.value,
        **named("source", move.move.source, hosts),
        **named("target", move.target or move.move.target, hosts),
        outcome=move.outcome.value,
        reason=move.reason,
    )


def _touched(result: ActionResult) -> set[str]:
    touched: set[str] = set()
    for run in result.runs:
        for move in run.results:
            touched.update(a for a in (move.move.source, move.move.target, move.target) if a)
    return touched
