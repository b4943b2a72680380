"""Requests into plans: the safety gates, router selection and placement. Pure.

``make_plan`` is what every action plans with and what ``l3ha plan`` shows
offline from a snapshot, so the two can never differ. A refusal is raised as
``SafetyHaltError`` (exit 3), bad input as ``BadInputError``/``NotFoundError``
(exit 2); nothing has been changed when either is raised.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol, TypeVar

from l3ha.errors import BadInputError, NotFoundError, SafetyHaltError, candidates_text
from l3ha.health import HealthPolicy, api_fleet_gate
from l3ha.kinds.base import KindMove
from l3ha.model import Agent, Halt, Plan, Snapshot
from l3ha.operations.request import Action, ActionRequest, PlacementRequest
from l3ha.planner import (
    PlacementPolicy,
    plan_drain,
    plan_evacuate,
    plan_migrate,
    plan_rebalance,
    plan_repair,
)

M = TypeVar("M", bound=KindMove)


class _Budgeted(Protocol):
    @property
    def moves(self) -> Sequence[KindMove]: ...
    @property
    def warnings(self) -> tuple[str, ...]: ...


PlanT = TypeVar("PlanT", bound=_Budgeted)

#: What the fleet gate's refusal says each action would have done.
_GATE_WORDS = {Action.HA_REPAIR: "repair HA routers"}


def resolve_placement(request: PlacementRequest, snapshot: Snapshot) -> PlacementPolicy:
    """The placement policy of a request; ``to`` agents resolved to ids."""
    allowed = frozenset(snapshot.find_agent(ref).id for ref in request.to) if request.to else None
    return PlacementPolicy(
        max_routers_per_agent=request.max_routers_per_agent,
        max_weight_per_agent=request.max_weight_per_agent,
        strict_az=request.strict_az,
        allowed_targets=allowed,
    )


def select_routers(
    request: ActionRequest, snapshot: Snapshot
) -> tuple[list[str] | None, list[str]]:
    """The routers the request names (ids, in order, no duplicates; None: all) and the
    unknown names skipped with ``skip_unknown``."""
    if not request.routers:
        return None, []
    ids: list[str] = []
    unknown: list[str] = []
    for ref in dict.fromkeys(request.routers):
        try:
            ids.append(snapshot.find_router(ref).id)
        except NotFoundError:
            unknown.append(ref)
    if unknown and not request.skip_unknown:
        raise NotFoundError(
            f"{len(unknown)} unknown router(s): {candidates_text(unknown, 20)}; nothing was "
            "changed (use --skip-unknown to move the others)"
        )
    return list(dict.fromkeys(ids)), unknown


def gate_fleet(request: ActionRequest, snapshot: Snapshot) -> None:
    """Refuse every action while many agents look dead at once (safety rules 1, 2, 9)."""
    words = _GATE_WORDS.get(request.action, request.action.value)
    refuse_when_fleet_down(snapshot.agents, words, force=request.force)


def refuse_when_fleet_down(
    agents: Sequence[Agent], words: str, *, force: bool, which: str = "agents"
) -> None:
    """The fleet gate of every kind: ``SafetyHaltError`` while many of ``agents`` (its
    ``which``) look dead at once, unless ``force``; ``words``: what was refused."""
    if force:
        return
    halt = api_fleet_gate(agents, HealthPolicy())
    if halt is not None:
        message = halt.message.replace("enabled agents", f"enabled {which}")
        raise SafetyHaltError(f"{message}; refusing to {words} (override with --force)")


def _evacuation_source(request: ActionRequest, snapshot: Snapshot) -> str:
    """The source agent's id, after the live-agent gate of an evacuation."""
    agent = snapshot.find_agent(_agent_ref(request))
    if agent.usable and not request.force:
        raise SafetyHaltError(
            f"agent {agent.host} is alive and enabled: use 'l3ha drain {agent.host}' to move its "
            "routers away make-before-break (or evacuate --force)"
        )
    return agent.id


def _not_a_target(placement: PlacementPolicy, snapshot: Snapshot, source: str, done: str) -> None:
    """``--to`` naming the agent the routers leave is bad input, not a plan with no target."""
    if placement.allowed_targets is not None and source in placement.allowed_targets:
        host = snapshot.agents_by_id[source].host
        raise BadInputError(f"--to names {host}, the agent being {done}: name other agents")


def _agent_ref(request: ActionRequest) -> str:
    if not request.agent:
        raise BadInputError(f"{request.action.value} needs an agent (host name or id)")
    return request.agent


def _check_hosted_by(snapshot: Snapshot, router_ids: list[str], agent_id: str) -> None:
    hosted = {b.router_id for b in snapshot.bindings_of_agent(agent_id)}
    elsewhere = [r for r in router_ids if r not in hosted]
    if elsewhere:
        host = snapshot.agents_by_id[agent_id].host
        raise BadInputError(
            f"{len(elsewhere)} router(s) not hosted by {host}: {candidates_text(elsewhere, 20)}; "
            "nothing was changed"
        )


def make_plan(request: ActionRequest, snapshot: Snapshot) -> Plan:
    """Plan the request on ``snapshot``, after its gates (see the module docstring)."""
    placement = resolve_placement(request.placement, snapshot)
    weights = request.weights
    skipped: list[str] = []
    result: Plan | Halt
    action = request.action
    if action is Action.EVACUATE:
        source = _evacuation_source(request, snapshot)
        _not_a_target(placement, snapshot, source, "evacuated")
        gate_fleet(request, snapshot)
        routers, skipped = select_routers(request, snapshot)
        if routers is not None:
            _check_hosted_by(snapshot, routers, source)
        result = plan_evacuate(snapshot, source, placement, weights, router_ids=routers)
    elif action is Action.DRAIN:
        agent_id = snapshot.find_agent(_agent_ref(request)).id
        _not_a_target(placement, snapshot, agent_id, "drained")
        gate_fleet(request, snapshot)
        result = plan_drain(snapshot, agent_id, placement, weights)
    elif action is Action.MIGRATE:
        routers, skipped = select_routers(request, snapshot)
        if not routers:
            raise BadInputError("name the routers to migrate (ROUTER... or --router-file FILE)")
        gate_fleet(request, snapshot)
        result = plan_migrate(snapshot, routers, placement, weights)
    elif action is Action.REBALANCE:
        gate_fleet(request, snapshot)
        result = plan_rebalance(snapshot, placement, weights, max_moves=request.max_moves)
    elif action is Action.REPAIR:
        gate_fleet(request, snapshot)
        result = plan_repair(snapshot, placement, weights)
    elif action is Action.HA_REPAIR:
        gate_fleet(request, snapshot)
        result = _ha_only(plan_repair(snapshot, placement, weights), snapshot)
    else:
        raise BadInputError(f"{action.value} makes no plan")
    if isinstance(result, Halt):
        raise SafetyHaltError(f"{result.reason.value}: {result.message}")
    if skipped:
        note = f"skipped {len(skipped)} unknown router(s): {candidates_text(skipped, 20)}"
        result = replace(result, warnings=(*result.warnings, note))
    return result


def _ha_only(plan: Plan, snapshot: Snapshot) -> Plan:
    """The HA part of a repair plan: replica replacements only."""
    ha_ids = {r.id for r in snapshot.routers if r.ha}
    return replace(
        plan,
        action=Action.HA_REPAIR.value,
        moves=tuple(m for m in plan.moves if m.router_id in ha_ids),
        unplaceable=tuple(u for u in plan.unplaceable if u.router_id in ha_ids),
    )


def within_budget(plan: PlanT, budget: int | None) -> PlanT:
    """The leading moves of a plan of any kind that fit ``budget`` (None: all), whole
    objects only (``cut_to_budget``); what is left out waits for a later cycle, said in a
    warning."""
    kept, note = cut_to_budget(plan.moves, budget)
    if not note:
        return plan
    canary = {"canary": min(plan.canary, len(kept))} if isinstance(plan, Plan) else {}
    return replace(plan, moves=kept, warnings=(*plan.warnings, note), **canary)  # type: ignore[type-var]


def cut_to_budget(moves: Sequence[M], budget: int | None) -> tuple[tuple[M, ...], str]:
    """The leading ``moves`` that fit ``budget`` (None: all) and the warning of the cut
    ("" when nothing is cut), for every kind of placement.

    The moves of one object (an HA router's add and remove) are kept or left out
    together.
    """
    if budget is None or len(moves) <= budget:
        return tuple(moves), ""
    kept: list[M] = []
    objects: set[str] = set()
    for index, move in enumerate(moves):
        obj = move.object_id
        if obj not in objects:
            rest = sum(1 for m in moves[index:] if m.object_id == obj)
            if len(kept) + rest > budget:
                break
            objects.add(obj)
        kept.append(move)
    left = len(moves) - len(kept)
    return tuple(kept), f"{left} move(s) left for later by the move budget ({budget})"
