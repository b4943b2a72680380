"""The commands that move routers: evacuate, drain, undrain, migrate, rebalance, repair, history.

I/O: reads and changes the cloud (through the executor only), the journal in
the state dir, and the terminal. Each command reads a fresh snapshot, finishes
any operation a crash interrupted, plans with the pure planner, and hands the
plan to the executor; it ends with a summary table (or ``-f json|yaml``) and
the exit code 0 all done, 1 some moves failed or a router is unhosted, 2 bad
input, 3 refused by a safety gate.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from l3ha.cli.argtypes import positive_float, positive_int
from l3ha.cli.common import add_cloud_options, open_cloud, warn_about_weights
from l3ha.cli.output import add_format_options, emit, emit_document
from l3ha.cli.planning import (
    add_force_option,
    add_placement_options,
    add_router_selection,
    make_plan,
    plan_document,
    plan_footer,
    plan_rows,
)
from l3ha.model import Plan, Snapshot

if TYPE_CHECKING:
    from l3ha.cloud.adapter import NeutronCloud
    from l3ha.executor import Progress, RunResult
    from l3ha.journal import Journal, OperationRecord

DRAIN_MARK = "l3ha: drained"


def add_state_dir_option(parser: argparse.ArgumentParser) -> None:
    """``--state-dir``: where the journal lives."""
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        help="journal directory (default: $L3HA_STATE_DIR, else $XDG_STATE_HOME/l3ha)",
    )


def add_execution_options(parser: argparse.ArgumentParser) -> None:
    """How a plan is run: dry run, concurrency, rate, waiting for ports, journal."""
    group = parser.add_argument_group("execution")
    group.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    group.add_argument(
        "--concurrency",
        type=positive_int,
        default=8,
        metavar="N",
        help="moves written at the same time (default: 8)",
    )
    group.add_argument(
        "--rate",
        type=positive_float,
        metavar="MOVES_PER_S",
        help="start at most this many moves per second (default: unlimited)",
    )
    group.add_argument(
        "--no-wait",
        action="store_true",
        help="do not wait for the routers' ports to turn ACTIVE on the target",
    )
    group.add_argument(
        "--port-timeout",
        type=positive_float,
        default=300.0,
        metavar="SECONDS",
        help="report a move as pending (a warning) when its ports are not ACTIVE by then "
        "(default: 300)",
    )
    add_state_dir_option(parser)
    add_format_options(parser, columns=False)


def _action_parser(
    sub: Any, name: str, help_text: str, description: str
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help_text, description=description)
    add_cloud_options(parser)
    return parser


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
    p.add_argument("agent", metavar="AGENT", help="host name or agent id")
    add_force_option(p, evacuate=True)
    add_router_selection(p, positional=False)
    add_placement_options(p)
    add_execution_options(p)
    p.set_defaults(func=lambda a: _run_action("evacuate", a), finishes_interrupted=True)

    p = _action_parser(
        sub,
        "drain",
        "move routers off a live agent, then disable it",
        "Take an agent out of service: move its routers away (HA routers make-before-break: "
        "a new replica first, then the old one removed), then disable the agent so nothing new "
        "lands there, and sweep up anything scheduled to it meanwhile.",
    )
    p.add_argument("agent", metavar="AGENT", help="host name or agent id")
    add_placement_options(p)
    add_execution_options(p)
    add_force_option(p)
    p.set_defaults(func=_run_drain)

    p = _action_parser(
        sub,
        "undrain",
        "enable a drained agent again",
        "Enable an agent again after maintenance; with --rebalance, refill it by rebalancing.",
    )
    p.add_argument("agent", metavar="AGENT", help="host name or agent id")
    p.add_argument("--rebalance", action="store_true", help="rebalance afterwards")
    p.add_argument("--max-moves", type=positive_int, metavar="N", help="cap the rebalance")
    add_placement_options(p, targets=False)
    add_execution_options(p)
    p.set_defaults(func=_run_undrain)

    p = _action_parser(
        sub,
        "migrate",
        "move the given routers",
        "Move the given routers (ids or names, or --router-file) to the best target, or to "
        "--to agents. Unknown routers are listed and nothing moves, unless --skip-unknown.",
    )
    add_router_selection(p, positional=True)
    add_placement_options(p)
    add_execution_options(p)
    add_force_option(p)
    p.set_defaults(func=lambda a: _run_action("migrate", a), finishes_interrupted=True)

    p = _action_parser(
        sub,
        "rebalance",
        "even out routers over every live agent",
        "Spread routers over every live, enabled agent with the fewest moves: router counts "
        "and busy-router counts end within one of each other where constraints allow.",
    )
    p.add_argument("--max-moves", type=positive_int, metavar="N", help="move at most N routers")
    add_placement_options(p)
    add_execution_options(p)
    add_force_option(p)
    p.set_defaults(func=lambda a: _run_action("rebalance", a), finishes_interrupted=True)

    p = _action_parser(
        sub,
        "repair",
        "finish interrupted operations, bind unhosted routers, fix HA replicas",
        "Finish operations a crash interrupted (from the cloud's actual state), bind routers "
        "that have no agent, and replace HA replicas on dead or disabled agents.",
    )
    add_placement_options(p, targets=False)
    add_execution_options(p)
    add_force_option(p)
    p.set_defaults(func=lambda a: _run_action("repair", a), finishes_interrupted=True)

    p = sub.add_parser(
        "history",
        help="operations and moves from the journal",
        description="List the operations and moves recorded in the journal, newest first.",
    )
    p.add_argument("--last", type=positive_int, metavar="N", help="only the last N operations")
    add_state_dir_option(p)
    add_format_options(p)
    p.set_defaults(func=_run_history)


# --- running --------------------------------------------------------------


def open_journal(args: argparse.Namespace) -> Journal:
    """The journal in ``--state-dir`` (or the default state dir)."""
    from pathlib import Path

    from l3ha.journal import Journal

    state_dir = getattr(args, "state_dir", None)
    return Journal(Path(state_dir) if state_dir else None)


def _journal_exists(args: argparse.Namespace) -> bool:
    from pathlib import Path

    from l3ha.journal import DB_NAME, default_state_dir

    state_dir = getattr(args, "state_dir", None)
    return ((Path(state_dir) if state_dir else default_state_dir()) / DB_NAME).exists()


def _say(text: str) -> None:
    sys.stderr.write(f"l3ha: {text}\n")


def finish_interrupted(
    cloud: NeutronCloud, journal: Journal, dry_run: bool
) -> tuple[bool, list[OperationRecord]]:
    """Finish the moves of operations a crash cut short, from the cloud's actual state.

    Returns whether every router ended hosted, and the interrupted operations
    (``repair`` then finishes what their plans had not reached yet).
    """
    from l3ha.clock import SystemClock
    from l3ha.executor import recover

    unfinished = journal.unfinished_operations()
    if not unfinished:
        return True, []
    for op in unfinished:
        _say(f"operation {op.id} ({op.kind}, started {op.started}) was interrupted; finishing it")
    results = recover(cloud, journal, SystemClock(), dry_run=dry_run)
    for result in results:
        row = result.as_row()
        _say(f"recovered router {row.get('router')}: {row.get('action')} {row.get('detail', '')}")
    return all(r.ok for r in results), unfinished


def _progress_printer() -> Any:
    if not sys.stderr.isatty():
        return None

    def show(progress: Progress) -> None:
        width = 30
        filled = width * progress.done // max(progress.total, 1)
        bar = "#" * filled + "." * (width - filled)
        end = "\n" if progress.done >= progress.total else ""
        sys.stderr.write(f"\r[{bar}] {progress.done}/{progress.total} {end}")
        sys.stderr.flush()

    return show


def execute_plan(
    args: argparse.Namespace, cloud: NeutronCloud, snapshot: Snapshot, plan: Plan, action: str
) -> int:
    """Print (dry run) or run the plan; print the summary; return the exit code."""
    if args.dry_run:
        return print_plan(plan, snapshot, args.format)
    from l3ha.clock import SystemClock
    from l3ha.executor import Executor, ExecutorOptions, snapshot_candidates

    options = ExecutorOptions(
        concurrency=args.concurrency,
        rate=args.rate,
        burst=max(1, math.ceil(args.rate)) if args.rate else ExecutorOptions.burst,
        wait_ports=not args.no_wait,
        port_timeout=args.port_timeout,
    )
    forced = bool(getattr(args, "force", False))
    with open_journal(args) as journal:
        executor = Executor(cloud, journal, SystemClock(), options)
        result = executor.run(
            plan,
            action,
            fallback_targets=snapshot_candidates(snapshot),
            progress=_progress_printer(),
            args={"command": action, "agent": getattr(args, "agent", None)},
            require_dead_source=False if forced else None,
        )
    print_result(result, snapshot, args.format)
    if plan.unplaceable:
        _say(f"{len(plan.unplaceable)} router(s) could not be placed and were not moved")
        return max(result.exit_code, 1)
    return result.exit_code


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
        doc["moves"] = [r.as_row() for r in result.results]
        emit_document(doc, fmt)
        return
    emit(result.summary_rows(), "table")
    attention = [r.as_row() for r in result.results if r.outcome.value not in ("moved", "planned")]
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


def _run_action(action: str, args: argparse.Namespace) -> int:
    from l3ha.cli.common import load_weight_policy

    weights = load_weight_policy(args)
    cloud = open_cloud(args)
    recovered_ok = True
    interrupted: list[OperationRecord] = []
    if not args.dry_run or _journal_exists(args):  # a dry run creates no journal
        with open_journal(args) as journal:
            recovered_ok, interrupted = finish_interrupted(cloud, journal, args.dry_run)
    snapshot = cloud.read_snapshot(with_ha_state=action == "repair")
    warn_about_weights(weights, snapshot)
    plan = make_plan(action, args, snapshot, weights)
    code = execute_plan(args, cloud, snapshot, plan, action)
    if action == "repair":
        code = max(code, _finish_interrupted_plans(args, cloud, interrupted))
    return code if recovered_ok else max(code, 1)


def _finish_interrupted_plans(
    args: argparse.Namespace, cloud: NeutronCloud, interrupted: list[OperationRecord]
) -> int:
    """Run again the evacuations and drains a crash cut short, on today's cloud."""
    from l3ha.errors import SafetyHaltError

    code = 0
    for op in interrupted:
        agent = op.args.get("agent")
        if op.kind not in ("evacuate", "drain") or not isinstance(agent, str):
            continue
        source = cloud.read_snapshot().find_agent(agent)
        if op.kind == "evacuate" and source.alive and source.admin_state_up:
            _say(f"agent {source.host} is alive again: its interrupted evacuation is not resumed")
            continue
        _say(f"finishing the {op.kind} of {agent} that operation {op.id} began")
        again = _with(args, agent=agent)
        try:
            step = _run_action("evacuate", again) if op.kind == "evacuate" else _run_drain(again)
        except SafetyHaltError as exc:
            _say(f"not finishing the {op.kind} of {agent}: {exc}")
            step = exc.exit_code
        code = max(code, step)
    return code


def _with(args: argparse.Namespace, **changes: object) -> argparse.Namespace:
    defaults: dict[str, object] = {
        "to": [],
        "routers": [],
        "router_file": None,
        "skip_unknown": False,
        "force": False,
        "max_moves": None,
    }
    return argparse.Namespace(**{**defaults, **vars(args), **changes})


def _run_drain(args: argparse.Namespace) -> int:
    """Move routers away first (a disabled agent tears its routers down), then disable."""
    from l3ha.cli.common import load_weight_policy

    weights = load_weight_policy(args)
    cloud = open_cloud(args)
    snapshot = cloud.read_snapshot()
    warn_about_weights(weights, snapshot)
    agent = snapshot.find_agent(args.agent)
    plan = make_plan("drain", args, snapshot, weights)
    code = execute_plan(args, cloud, snapshot, plan, "drain")
    if args.dry_run:
        sys.stdout.write(f"would then disable agent {agent.host}\n")
        return code
    left = cloud.read_snapshot().bindings_of_agent(agent.id)
    if code != 0 or left:
        _say(
            f"agent {agent.host} left enabled: {len(left)} router(s) still on it "
            "(a disabled agent tears its routers down); fix the cause and drain again"
        )
        return max(code, 1)
    cloud.set_admin_state(agent.id, False)
    cloud.set_description(agent.id, f"{DRAIN_MARK} {snapshot.observed_at}".strip())
    _say(f"agent {agent.host} disabled")
    snapshot = cloud.read_snapshot()
    if snapshot.bindings_of_agent(agent.id):
        _say(f"{len(snapshot.bindings_of_agent(agent.id))} router(s) landed meanwhile; moving them")
        plan = make_plan("drain", args, snapshot, weights)
        code = max(code, execute_plan(args, cloud, snapshot, plan, "drain"))
    return code


def _run_undrain(args: argparse.Namespace) -> int:
    cloud = open_cloud(args)
    snapshot = cloud.read_snapshot()
    agent = snapshot.find_agent(args.agent)
    if args.dry_run:
        sys.stdout.write(f"would enable agent {agent.host}\n")
    else:
        cloud.set_admin_state(agent.id, True)
        if agent.description.startswith(DRAIN_MARK):
            cloud.set_description(agent.id, "")
        _say(f"agent {agent.host} enabled")
    if not args.rebalance:
        return 0
    if args.dry_run:  # plan as if the agent were already enabled
        from l3ha.cli.common import load_weight_policy

        enabled = replace(agent, admin_state_up=True)
        agents = tuple(enabled if a.id == agent.id else a for a in snapshot.agents)
        world = replace(snapshot, agents=agents)
        plan = make_plan("rebalance", _with(args), world, load_weight_policy(args))
        return print_plan(plan, world, args.format)
    return _run_action("rebalance", _with(args))


def _run_history(args: argparse.Namespace) -> int:
    rows: list[dict[str, object]] = []
    if _journal_exists(args):  # reading history never creates a journal
        with open_journal(args) as journal:
            rows = journal.history_rows(args.last)
    known = [
        "operation",
        "kind",
        "started",
        "status",
        "router",
        "move",
        "source",
        "target",
        "step",
        "outcome",
        "reason",
        "detail",
        "updated",
    ]
    emit(rows, args.format, args.column, known)
    return 0
