"""Options into action requests, and plans into rows. I/O: reads --router-file only.

Shared by the action commands (``evacuate``, ``drain``, ``migrate``,
``rebalance``, ``repair``, ``ha repair``) and by ``l3ha plan``: both build
the same ``ActionRequest`` and plan it with ``l3ha.operations.make_plan``, so
a plan made offline from a snapshot is exactly the plan the action would run.
"""

from __future__ import annotations

import argparse
from typing import Any

from l3ha.cli.argtypes import positive_int
from l3ha.cli.common import read_text_file
from l3ha.errors import BadInputError
from l3ha.executor import ExecutorOptions
from l3ha.model import Plan, Snapshot
from l3ha.operations import Action, ActionRequest, PlacementRequest
from l3ha.weights import WeightPolicy


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
        type=positive_int,
        metavar="N",
        help="never place more than N routers on one agent",
    )
    group.add_argument(
        "--max-weight-per-agent",
        type=positive_int,
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
    refs = []
    for number, line in enumerate(read_text_file(path, "router file").splitlines(), start=1):
        ref = line.split("#", 1)[0].strip()
        if "," in ref:
            raise BadInputError(
                f"router file {path} line {number}: {ref!r} is not one router "
                "(one id or name per line, no commas)"
            )
        if ref:
            refs.append(ref)
    return refs


def router_refs(args: argparse.Namespace) -> tuple[str, ...]:
    """The routers named by ``ROUTER…``/``--router`` and ``--router-file``, in order."""
    refs = list(getattr(args, "routers", None) or [])
    if getattr(args, "router_file", None):
        refs += read_router_file(args.router_file)
        if not refs:
            raise BadInputError(f"router file {args.router_file} names no routers")
    return tuple(refs)


def placement_request(args: argparse.Namespace) -> PlacementRequest:
    """The placement options as a request (agents still named as the operator named them)."""
    return PlacementRequest(
        to=tuple(getattr(args, "to", None) or ()),
        max_routers_per_agent=getattr(args, "max_routers_per_agent", None),
        max_weight_per_agent=getattr(args, "max_weight_per_agent", None),
        strict_az=bool(getattr(args, "strict_az", False)),
    )


def action_request(
    action: Action,
    args: argparse.Namespace,
    weights: WeightPolicy,
    execution: ExecutorOptions | None = None,
) -> ActionRequest:
    """The request the options of an action command (or ``l3ha plan``) describe."""
    return ActionRequest(
        action=action,
        weights=weights,
        execution=execution or ExecutorOptions(dry_run=True),
        placement=placement_request(args),
        agent=getattr(args, "agent", None),
        routers=router_refs(args),
        skip_unknown=bool(getattr(args, "skip_unknown", False)),
        force=bool(getattr(args, "force", False)),
        max_moves=getattr(args, "max_moves", None),
        rebalance_after=bool(getattr(args, "rebalance", False)),
    )


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
