"""``l3ha dhcp audit|evacuate|drain|undrain|repair``. I/O: opens the cloud and the journal,
writes the terminal.

Each command parses its options into a ``DhcpRequest``, calls the DHCP
operation (``l3ha.operations.dhcp``: gate, plan, execute, verify; every write
through the DHCP executor) and prints what it did. Exit codes are the
router commands': 0 done, 1 some moves failed or a network is left without
its copy, 2 bad input (unknown agent, an L3 agent given, ambiguous host),
3 refused by a safety gate. ``dhcp audit`` exits like ``l3ha check``.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from l3ha.cli.argtypes import positive_int
from l3ha.cli.check import add_report_format, report, report_unknown
from l3ha.cli.common import add_cloud_options, command_group, open_cloud
from l3ha.cli.execution import add_execution_options, executor_options, open_journal, say
from l3ha.cli.output import emit, emit_document
from l3ha.dhcp_model import DEFAULT_AGENTS_PER_NETWORK

if TYPE_CHECKING:
    from l3ha.operations.dhcp import DhcpExecuted, DhcpResult


def add_count_option(parser: argparse.ArgumentParser) -> None:
    """``--agents-per-network N``: the copies every network should have."""
    parser.add_argument(
        "--agents-per-network",
        type=positive_int,
        default=DEFAULT_AGENTS_PER_NETWORK,
        metavar="N",
        help="live DHCP agents every network should have; set it to Neutron's "
        f"dhcp_agents_per_network (default: {DEFAULT_AGENTS_PER_NETWORK}, Neutron's default)",
    )


def register(sub: Any) -> None:
    """Add the ``l3ha dhcp`` commands."""
    group = command_group(
        sub, "dhcp", "DHCP agents: audit, evacuate, drain, undrain and repair DHCP networks"
    )
    p = group.add_parser(
        "audit",
        help="networks without DHCP, with too few or too many copies, dead agents hosting",
        description=(
            "Report networks served by no live, enabled DHCP agent (CRITICAL), networks below "
            "or above --agents-per-network live copies, and dead or disabled DHCP agents still "
            "hosting networks. Exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN, like 'l3ha check'."
        ),
    )
    add_cloud_options(p, weights=False)
    add_count_option(p)
    add_report_format(p, "finding")
    p.set_defaults(func=_run_audit)

    specs = [
        (
            "evacuate",
            "move every network off a dead DHCP agent",
            "Move every network off a dead (or disabled) DHCP agent, make before break: add it to "
            "a live agent, wait until its DHCP port there is ACTIVE, then remove it from the dead "
            "one. Refuses a live, enabled agent (use 'dhcp drain') unless --force.",
        ),
        (
            "drain",
            "move networks off a live DHCP agent, then disable it",
            "Take a DHCP agent out of service: move each network to another live agent (make "
            "before break), then disable the agent, then move whatever landed meanwhile.",
        ),
        (
            "undrain",
            "enable a drained DHCP agent again",
            "Enable a DHCP agent again after maintenance and clear l3ha's drain mark.",
        ),
        (
            "repair",
            "bring every network to exactly --agents-per-network live copies",
            "Give every network that needs DHCP exactly --agents-per-network copies on live, "
            "enabled agents: replace copies on dead or disabled agents, add missing ones; extra "
            "copies (and dead ones no longer needed) are removed only with --trim. There is no "
            "mode that puts every network on every agent.",
        ),
    ]
    for name, help_text, description in specs:
        p = group.add_parser(name, help=help_text, description=description)
        add_cloud_options(p, weights=False)
        if name != "repair":
            p.add_argument("agent", metavar="AGENT", help="host name or DHCP agent id")
        if name != "undrain":
            add_count_option(p)
            p.add_argument(
                "--to",
                action="append",
                default=[],
                metavar="AGENT",
                help="only move networks to these DHCP agents (repeatable)",
            )
            p.add_argument(
                "--force",
                action="store_true",
                help="act although many DHCP agents look dead at once"
                + (" or the agent is alive" if name == "evacuate" else ""),
            )
        if name == "repair":
            p.add_argument(
                "--trim", action="store_true", help="also remove copies above --agents-per-network"
            )
        add_execution_options(p)
        p.set_defaults(func=_run_action, dhcp_action=name)


def _run_audit(args: argparse.Namespace) -> int:
    from l3ha.cloud.dhcp import NeutronDhcp
    from l3ha.dhcp_audit import dhcp_report
    from l3ha.errors import L3haError

    try:
        snapshot = NeutronDhcp(open_cloud(args)).read_dhcp_snapshot()
    except L3haError as exc:
        return report_unknown(args, str(exc), "DHCP")
    return report(args, dhcp_report(snapshot, args.agents_per_network))


def _run_action(args: argparse.Namespace) -> int:
    from l3ha.clock import SystemClock
    from l3ha.cloud.dhcp import NeutronDhcp
    from l3ha.operations.dhcp import DhcpContext, run_dhcp_action
    from l3ha.operations.request import DhcpAction, DhcpRequest

    request = DhcpRequest(
        action=DhcpAction(f"dhcp-{args.dhcp_action}"),
        agent=getattr(args, "agent", None),
        to=tuple(getattr(args, "to", ()) or ()),
        agents_per_network=getattr(args, "agents_per_network", DEFAULT_AGENTS_PER_NETWORK),
        trim=bool(getattr(args, "trim", False)),
        force=bool(getattr(args, "force", False)),
        execution=executor_options(args),
    )
    cloud = NeutronDhcp(open_cloud(args))
    with open_journal(args, request.dry_run) as journal:
        ctx = DhcpContext(cloud, journal, SystemClock(), say)
        result = run_dhcp_action(ctx, request)
    _print_result(result, args.format)
    return result.exit_code


def _print_result(result: DhcpResult, fmt: str) -> None:
    """Plans (dry run) or run summaries, then agent changes."""
    if fmt != "table":
        emit_document(
            {
                "action": result.action.value,
                "runs": [e.run.summary() for e in result.executed],
                "agent_changes": [
                    {"agent": c.change.host, "outcome": c.outcome.value, "detail": c.detail}
                    for c in result.changes
                ],
                "problems": list(result.problems),
                "exit_code": result.exit_code,
            },
            fmt,
        )
        return
    for executed in result.executed:
        _print_run(executed)
    for change in result.changes:
        verb = "enable" if change.change.admin_state_up else "disable"
        if change.outcome.value == "planned":
            sys.stdout.write(f"would then {verb} DHCP agent {change.change.host}\n")
    for problem in result.problems:
        sys.stdout.write(f"problem: {problem}\n")


def _print_run(executed: DhcpExecuted) -> None:
    run, snapshot = executed.run, executed.snapshot
    hosts = {a.id: a.host for a in snapshot.agents}
    rows = [
        {
            **r.as_row(),
            "source": hosts.get(r.move.source or "", r.move.source or ""),
            "target": hosts.get(r.target or r.move.target or "", r.target or r.move.target or ""),
        }
        for r in run.results
        if run.dry_run or r.outcome.value not in ("moved", "added", "removed")
    ]
    if rows:
        emit(rows, "table", known=["network", "kind", "source", "target", "outcome", "reason"])
    for u in run.unplaced:
        sys.stdout.write(f"not placed: network {u.network_id}: {u.reason}\n")
    counts = ", ".join(f"{k} {v}" for k, v in run.counts().items() if v)
    verb = "planned" if run.dry_run else f"in {run.seconds:.1f} s"
    sys.stdout.write(f"{run.action}: {len(run.results)} move(s) {verb} ({counts or 'none'})\n")
