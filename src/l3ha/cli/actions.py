"""The commands that move routers: evacuate, drain, undrain, migrate, rebalance, repair, history.

I/O: opens the cloud and the journal in the state dir, and writes the
terminal. Each command only parses its options into an ``ActionRequest``,
calls the operation (``l3ha.operations``: recover, gate, plan, execute,
verify — every write through the executor) and prints what it did: a
summary table (or ``-f json|yaml``) and the exit code 0 all done, 1 some
moves failed or a router is unhosted, 2 bad input, 3 refused by a safety
gate.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from l3ha.cli.argtypes import positive_int
from l3ha.cli.common import add_cloud_options, load_weight_policy, open_cloud
from l3ha.cli.execution import (
    add_execution_options,
    executor_options,
    open_journal,
    progress_printer,
    say,
)
from l3ha.cli.history import add_history_parser
from l3ha.cli.output import emit, emit_document
from l3ha.cli.ovn import add_backend_option
from l3ha.cli.ovn_actions import (
    add_drain_check_options,
    add_ovn_options,
    gateway_backend,
    run_gateway_action,
)
from l3ha.cli.planning import (
    action_request,
    add_force_option,
    add_placement_options,
    add_router_selection,
    plan_document,
    plan_footer,
    plan_rows,
)
from l3ha.model import Plan, Snapshot
from l3ha.operations import Action

if TYPE_CHECKING:
    from l3ha.executor import RunResult
    from l3ha.operations import ActionResult


def _action_parser(
    sub: Any, name: str, help_text: str, description: str, agent: bool = True
) -> argparse.ArgumentParser:
    """An action command with the cloud options (and, with ``agent``, its AGENT)."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help_text, description=description)
    add_cloud_options(parser)
    if agent:
        parser.add_argument("agent", metavar="AGENT", help="host name or agent id")
    return parser


def _add_run_options(
    parser: argparse.ArgumentParser, targets: bool = True, force: bool = True, backend: bool = True
) -> None:
    """Placement and execution options, then ``--force`` and ``--backend`` (as asked)."""
    add_placement_options(parser, targets)
    add_execution_options(parser)
    if force:
        add_force_option(parser)
    if backend:
        add_backend_option(parser)


def register(sub: Any) -> None:
    """Add the action commands."""
    p = _action_parser(
        sub,
        "evacuate",
        "move every router off a dead agent",
        "Move every router off a dead L3 agent (named by host or id): a canary batch of quiet "
        "routers first, a re-check that the agent is still dead, then the rest, busy routers "
        "early. Refuses a live, enabled agent (use drain) unless --force.",
    )
    add_force_option(p, evacuate=True)
    add_router_selection(p, positional=False)
    _add_run_options(p, force=False)
    add_ovn_options(p)
    p.set_defaults(
        func=lambda a: _on_gateways_or_routers(Action.EVACUATE, a), finishes_interrupted=True
    )

    p = _action_parser(
        sub,
        "drain",
        "move routers off a live agent, then disable it",
        "Take an agent out of service: move its routers away (HA routers make-before-break: "
        "a new replica first, then the old one removed), then disable the agent so nothing new "
        "lands there, and sweep up anything scheduled to it meanwhile.",
    )
    _add_run_options(p)
    add_drain_check_options(p)
    p.set_defaults(func=lambda a: _on_gateways_or_routers(Action.DRAIN, a))

    p = _action_parser(
        sub,
        "undrain",
        "enable a drained agent again",
        "Enable an agent again after maintenance; with --rebalance, refill it by rebalancing.",
    )
    p.add_argument("--rebalance", action="store_true", help="rebalance afterwards")
    p.add_argument("--max-moves", type=positive_int, metavar="N", help="cap the rebalance")
    _add_run_options(p, targets=False, force=False)
    p.set_defaults(func=lambda a: _on_gateways_or_routers(Action.UNDRAIN, a))

    p = _action_parser(
        sub,
        "migrate",
        "move the given routers",
        "Move the given routers (ids or names, or --router-file) to the best target, or to "
        "--to agents. Unknown routers are listed and nothing moves, unless --skip-unknown.",
        agent=False,
    )
    add_router_selection(p, positional=True)
    _add_run_options(p, backend=False)
    p.set_defaults(func=lambda a: run_command(Action.MIGRATE, a), finishes_interrupted=True)

    p = _action_parser(
        sub,
        "rebalance",
        "even out routers over every live agent",
        "Spread routers over every live, enabled agent with the fewest moves: router counts "
        "and busy-router counts end within one of each other where constraints allow.",
        agent=False,
    )
    p.add_argument("--max-moves", type=positive_int, metavar="N", help="move at most N routers")
    _add_run_options(p)
    p.set_defaults(
        func=lambda a: _on_gateways_or_routers(Action.REBALANCE, a), finishes_interrupted=True
    )

    p = _action_parser(
        sub,
        "repair",
        "finish interrupted operations, bind unhosted routers, fix HA replicas",
        "Finish operations a crash interrupted (from the cloud's actual state), bind routers "
        "that have no agent, and replace HA replicas on dead or disabled agents.",
        agent=False,
    )
    _add_run_options(p, targets=False, backend=False)
    p.set_defaults(func=lambda a: run_command(Action.REPAIR, a), finishes_interrupted=True)

    add_history_parser(sub)


# --- running --------------------------------------------------------------


def _on_gateways_or_routers(action: Action, args: argparse.Namespace) -> int:
    """``l3ha evacuate|drain|undrain|rebalance``: gateway chassis on ML2/OVN
    (``l3ha.cli.ovn_actions``), else routers."""
    ovn = gateway_backend(args)
    if ovn is None:
        return run_command(action, args)
    return run_gateway_action(action.value, args, ovn)


def run_command(action: Action, args: argparse.Namespace) -> int:
    """Build the request, run the operation, print every step; the exit code."""
    from dataclasses import replace

    from l3ha.cli.progress import MoveCount
    from l3ha.cli.weighing import measure_options, weigh
    from l3ha.clock import SystemClock
    from l3ha.operations import OperationContext, run_action

    request = action_request(action, args, load_weight_policy(args), executor_options(args))
    measure_options(args)  # a bad combination fails before the cloud is opened
    cloud = open_cloud(args)
    request = replace(request, weights=weigh(args, request.weights, cloud))
    moves = MoveCount(progress_printer())
    with open_journal(args, request.dry_run) as journal:
        ctx = OperationContext(cloud, journal, SystemClock(), say, moves)
        try:
            result = run_action(ctx, request)
        except KeyboardInterrupt:
            raise KeyboardInterrupt(moves.interrupted(action.value)) from None
    print_steps(result, args.format)
    return result.exit_code


def print_steps(result: ActionResult, fmt: str) -> None:
    """Every step of an action in order: plans (dry run), run summaries, agent changes."""
    from l3ha.executor import AgentChangeOutcome
    from l3ha.operations import Executed

    for step in result.steps:
        if isinstance(step, Executed):
            if step.run.dry_run:
                print_plan(step.plan, step.snapshot, fmt)
            else:
                print_result(step.run, step.snapshot, fmt)
        elif step.result.outcome is AgentChangeOutcome.PLANNED:
            change = step.result.change
            verb = "enable" if change.admin_state_up else "disable"
            then = " then" if change.admin_state_up is False else ""
            sys.stdout.write(f"would{then} {verb} agent {change.host}\n")


def print_plan(plan: Plan, snapshot: Snapshot, fmt: str) -> int:
    """Show a plan; exit code 0."""
    if fmt != "table":
        emit_document(plan_document(plan, snapshot), fmt)
        return 0
    if plan.moves:
        emit(plan_rows(plan, snapshot), "table")
    for line in plan_footer(plan):
        sys.stdout.write(line + "\n")
    return 0


def print_result(result: RunResult, snapshot: Snapshot, fmt: str) -> None:
    """The summary table: counts, then every move that needs a reader's attention."""
    if fmt != "table":
        doc = result.summary()
        doc["moves"] = [with_names(r.as_row(), snapshot) for r in result.results]
        emit_document(doc, fmt)
        return
    emit(result.summary_rows(), "table")
    attention = [
        named_row(r.as_row(), snapshot)
        for r in result.results
        if r.outcome.value not in ("moved", "planned")
    ]
    if attention:
        sys.stdout.write("\n")
        emit(
            attention,
            "table",
            known=["router", "outcome", "source", "target", "reason", "pending_ports"],
        )
    for warning in result.warnings:
        sys.stdout.write(f"warning: {warning}\n")
    sys.stdout.write(f"{result.action}: {len(result.results)} move(s) in {result.seconds:.1f} s\n")


def named_row(row: dict[str, object], snapshot: Snapshot) -> dict[str, object]:
    """A result row (``as_row``) for a table: the router's name and the agents' hosts in
    place of their ids."""
    names = with_names(row, snapshot)
    return {
        **row,
        "router": names["router_name"] or row["router"],
        "source": names["source_host"] or row["source"],
        "target": names["target_host"] or row["target"],
    }


def with_names(row: dict[str, object], snapshot: Snapshot) -> dict[str, object]:
    """A result row (``as_row``) for JSON and YAML: the ids as they were (scripts key on
    them), with ``router_name``, ``source_host`` and ``target_host`` added."""
    router = snapshot.routers_by_id.get(str(row["router"]))
    named = {**row, "router_name": router.name if router else ""}
    for end in ("source", "target"):
        agent = snapshot.agents_by_id.get(str(row[end]))
        named[f"{end}_host"] = agent.host if agent else ""
    return named
