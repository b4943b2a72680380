"""Options into plans: placement, router lists, safety gates. I/O: reads --router-file only.

Shared by the action commands (``evacuate``, ``drain``, ``migrate``,
``rebalance``, ``repair``) and by ``l3ha plan``, so that a plan made offline
from a snapshot is exactly the plan the action would run.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from l3ha.cli.argtypes import non_negative_int
from l3ha.errors import BadInputError, NotFoundError, SafetyHaltError, candidates_text
from l3ha.health import HealthPolicy, api_fleet_gate
from l3ha.model import Halt, Plan, Snapshot
from l3ha.planner import (
    PlacementPolicy,
    plan_drain,
    plan_evacuate,
    plan_migrate,
    plan_rebalance,
    plan_repair,
)
from l3ha.weights import WeightPolicy

ACTIONS = ("evacuate", "drain", "migrate", "rebalance", "repair")


def add_placement_options(parser: argparse.ArgumentParser, targets: bool = True) -> None:
    """Where routers may go: ``--to``, capacities, ``--strict-az``, canary size."""
    group = parser.add_argument_group("placement")
    if targets:
        group.add_argument(
            "--to",
            action="append",
            default=[],
            metavar="AGENT",
            help="only move routers to this agent (host or id; repeatable)",
        )
    group.add_argument(
        "--max-routers-per-agent",
        type=non_negative_int,
        metavar="N",
        help="never place more than N routers on one agent",
    )
    group.add_argument(
        "--max-weight-per-agent",
        type=non_negative_int,
        metavar="N",
        help="never place more than N weight (busy routers count more) on one agent",
    )
    group.add_argument(
        "--strict-az",
        action="store_true",
        help="refuse to place a router outside its availability-zone hints (default: warn)",
    )


def add_force_option(parser: argparse.ArgumentParser, evacuate: bool = False) -> None:
    """``--force``: act although a safety gate would refuse."""
    extra = " and even when the agent is alive and enabled" if evacuate else ""
    parser.add_argument(
        "--force",
        action="store_true",
        help=f"act even when many agents look dead at once (a control-plane fault){extra}",
    )


def add_router_selection(parser: argparse.ArgumentParser, positional: bool) -> None:
    """Routers named on the command line (``ROUTER…`` or ``--router``) or in ``--router-file``."""
    if positional:
        parser.add_argument("routers", nargs="*", metavar="ROUTER", help="router id or name")
    else:
        parser.add_argument(
            "--router",
            dest="routers",
            action="append",
            default=[],
            metavar="ID",
            help="only this router (repeatable)",
        )
    parser.add_argument(
        "--router-file",
        metavar="FILE",
        help="router ids or names, one per line ('#' comments and blank lines are ignored)",
    )
    parser.add_argument(
        "--skip-unknown",
        action="store_true",
        help="ignore routers that do not exist (default: list them and change nothing)",
    )


def read_router_file(path: str) -> list[str]:
    """Router references from a file: one per line, comments and blanks skipped."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise BadInputError(f"cannot read router file {path}: {reason}") from exc
    refs = []
    for line in text.splitlines():
        ref = line.split("#", 1)[0].strip()
        if ref:
            refs.append(ref)
    return refs


def selected_router_ids(
    args: argparse.Namespace, snapshot: Snapshot
) -> tuple[list[str] | None, list[str]]:
    """The routers the options name (ids, in order, no duplicates; None: all) and the
    unknown names skipped with ``--skip-unknown``."""
    refs = list(getattr(args, "routers", None) or [])
    if getattr(args, "router_file", None):
        refs += read_router_file(args.router_file)
        if not refs:
            raise BadInputError(f"router file {args.router_file} names no routers")
    if not refs:
        return None, []
    ids: list[str] = []
    unknown: list[str] = []
    for ref in dict.fromkeys(refs):
        try:
            ids.append(snapshot.find_router(ref).id)
        except NotFoundError:
            unknown.append(ref)
    if unknown and not getattr(args, "skip_unknown", False):
        raise NotFoundError(
            f"{len(unknown)} unknown router(s): {candidates_text(unknown, 20)}; nothing was "
            "changed (use --skip-unknown to move the others)"
        )
    return list(dict.fromkeys(ids)), unknown


def placement_from_args(args: argparse.Namespace, snapshot: Snapshot) -> PlacementPolicy:
    """The placement policy the options describe; ``--to`` agents resolved to ids."""
    refs: Sequence[str] = getattr(args, "to", None) or []
    allowed = frozenset(snapshot.find_agent(ref).id for ref in refs) if refs else None
    return PlacementPolicy(
        max_routers_per_agent=getattr(args, "max_routers_per_agent", None),
        max_weight_per_agent=getattr(args, "max_weight_per_agent", None),
        strict_az=bool(getattr(args, "strict_az", False)),
        allowed_targets=allowed,
    )


def _gate_evacuation(args: argparse.Namespace, snapshot: Snapshot, agent_ref: str) -> str:
    """The source agent's id, after the live-agent gate of an evacuation."""
    agent = snapshot.find_agent(agent_ref)
    if agent.alive and agent.admin_state_up and not getattr(args, "force", False):
        raise SafetyHaltError(
            f"agent {agent.host} is alive and enabled: use 'l3ha drain {agent.host}' to move its "
            "routers away make-before-break (or evacuate --force)"
        )
    return agent.id


def gate_fleet(action: str, args: argparse.Namespace, snapshot: Snapshot) -> None:
    """Refuse every action while many agents look dead at once (safety rules 1, 2, 9)."""
    if getattr(args, "force", False):
        return
    halt = api_fleet_gate(snapshot.agents, HealthPolicy())
    if halt is not None:
        raise SafetyHaltError(f"{halt.message}; refusing to {action} (override with --force)")


def _check_hosted_by(snapshot: Snapshot, router_ids: list[str], agent_id: str) -> None:
    hosted = {b.router_id for b in snapshot.bindings_of_agent(agent_id)}
    elsewhere = [r for r in router_ids if r not in hosted]
    if elsewhere:
        host = snapshot.agents_by_id[agent_id].host
        raise BadInputError(
            f"{len(elsewhere)} router(s) not hosted by {host}: {candidates_text(elsewhere, 20)}; "
            "nothing was changed"
        )


def make_plan(
    action: str, args: argparse.Namespace, snapshot: Snapshot, weights: WeightPolicy
) -> Plan:
    """Plan ``action`` on ``snapshot`` as the options say; a Halt becomes SafetyHaltError."""
    placement = placement_from_args(args, snapshot)
    skipped: list[str] = []
    result: Plan | Halt
    if action == "evacuate":
        source = _gate_evacuation(args, snapshot, args.agent)
        gate_fleet(action, args, snapshot)
        routers, skipped = selected_router_ids(args, snapshot)
        if routers is not None:
            _check_hosted_by(snapshot, routers, source)
        result = plan_evacuate(snapshot, source, placement, weights, router_ids=routers)
    elif action == "drain":
        gate_fleet(action, args, snapshot)
        result = plan_drain(snapshot, snapshot.find_agent(args.agent).id, placement, weights)
    elif action == "migrate":
        routers, skipped = selected_router_ids(args, snapshot)
        if not routers:
            raise BadInputError("name the routers to migrate (ROUTER... or --router-file FILE)")
        gate_fleet(action, args, snapshot)
        result = plan_migrate(snapshot, routers, placement, weights)
    elif action == "rebalance":
        gate_fleet(action, args, snapshot)
        result = plan_rebalance(snapshot, placement, weights, max_moves=args.max_moves)
    elif action == "repair":
        gate_fleet(action, args, snapshot)
        result = plan_repair(snapshot, placement, weights)
    else:
        raise BadInputError(f"unknown action {action!r}; actions are: {', '.join(ACTIONS)}")
    if isinstance(result, Halt):
        raise SafetyHaltError(f"{result.reason.value}: {result.message}")
    if skipped:
        note = f"skipped {len(skipped)} unknown router(s): {candidates_text(skipped, 20)}"
        result = replace(result, warnings=(*result.warnings, note))
    return result


def _host(snapshot: Snapshot, agent_id: str | None) -> str:
    if agent_id is None:
        return ""
    agent = snapshot.agents_by_id.get(agent_id)
    return agent.host if agent else agent_id


def plan_rows(plan: Plan, snapshot: Snapshot) -> list[dict[str, Any]]:
    """One row per move, with host names and router names for people."""
    rows = []
    for index, move in enumerate(plan.moves):
        router = snapshot.routers_by_id.get(move.router_id)
        rows.append(
            {
                "seq": index + 1,
                "router": move.router_id,
                "name": router.name if router else "",
                "kind": move.kind.value,
                "source": _host(snapshot, move.source),
                "target": _host(snapshot, move.target),
                "canary": index < plan.canary,
                "reason": move.reason,
            }
        )
    return rows


def plan_document(plan: Plan, snapshot: Snapshot) -> dict[str, Any]:
    """The whole plan as data (``-f json|yaml``)."""
    return {
        "action": plan.action,
        "moves": plan_rows(plan, snapshot),
        "move_count": len(plan.moves),
        "lower_bound": plan.lower_bound,
        "canary": plan.canary,
        "unplaceable": [{"router": u.router_id, "reason": u.reason} for u in plan.unplaceable],
        "warnings": list(plan.warnings),
    }


def plan_footer(plan: Plan) -> list[str]:
    """Lines printed under a plan table."""
    lines = [
        f"{len(plan.moves)} move(s)"
        + (f"; lower bound {plan.lower_bound}" if plan.lower_bound is not None else "")
    ]
    lines += [f"unplaceable: {u.router_id}: {u.reason}" for u in plan.unplaceable]
    lines += [f"warning: {w}" for w in plan.warnings]
    return lines
