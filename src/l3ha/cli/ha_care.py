"""``l3ha ha audit`` and ``l3ha ha repair``: HA router state audit and redundancy repair.

I/O: reads the cloud (with each replica's ``ha_state``); ``repair`` runs the
``ha-repair`` operation (every write through the executor). Exit codes of
``audit`` follow ``l3ha check``: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from l3ha.cli.actions import run_command
from l3ha.cli.common import (
    add_cloud_options,
    add_replicas_option,
    add_snapshot_option,
    command_group,
    read_world,
)
from l3ha.cli.execution import add_execution_options
from l3ha.cli.ha import HA_HELP
from l3ha.cli.output import add_format_options, emit
from l3ha.cli.planning import add_force_option, add_placement_options
from l3ha.operations import Action


def register(subparsers: Any) -> None:
    """Add ``l3ha ha audit`` and ``l3ha ha repair`` to the shared ``ha`` group."""
    group = command_group(subparsers, "ha", HA_HELP)
    p = group.add_parser(
        "audit",
        help="find HA routers with zero or two active replicas, dead or missing replicas",
        description=(
            "Audit every HA router: zero 'active' replicas, two or more (split brain), all "
            "'unknown', replicas on dead or disabled agents, fewer live replicas than "
            "--replicas, replicas crowded in one AZ. Exit 0 OK, 1 WARNING, 2 CRITICAL."
        ),
    )
    add_cloud_options(p, weights=False)
    add_snapshot_option(p)
    add_replicas_option(p)
    add_format_options(p)
    p.set_defaults(func=_run_audit)

    p = group.add_parser(
        "repair",
        help="replace HA replicas on dead or disabled agents (never moves the active one)",
        description=(
            "For each HA router with a replica on a dead or disabled (draining) agent: add a "
            "replica on a healthy agent (another AZ where possible, load-aware), read it back, "
            "then remove the old binding. Healthy replicas, the active one included, are never "
            "touched."
        ),
    )
    add_cloud_options(p)
    add_placement_options(p, targets=False)
    add_force_option(p)
    add_execution_options(p)
    p.set_defaults(func=lambda a: run_command(Action.HA_REPAIR, a))


AUDIT_COLUMNS = ["router", "name", "severity", "finding", "detail", "agents"]


def _run_audit(args: argparse.Namespace) -> int:
    from l3ha.hastate.audit import audit_ha_routers, worst_severity

    snapshot = read_world(args, with_ha_state=True)
    findings = audit_ha_routers(snapshot, replicas=args.replicas)
    rows = []
    for f in findings:
        router = snapshot.routers_by_id.get(f.router_id)
        hosts = [snapshot.agents_by_id[a].host for a in f.agents if a in snapshot.agents_by_id]
        rows.append(
            {
                "router": f.router_id,
                "name": router.name if router else "",
                "severity": f.severity.name,
                "finding": f.kind.value,
                "detail": f.detail,
                "agents": hosts,
            }
        )
    emit(rows, args.format, args.column, AUDIT_COLUMNS, options=args)
    if args.format == "table":
        ha_count = sum(1 for r in snapshot.routers if r.ha)
        sys.stdout.write(f"{len(findings)} finding(s) in {ha_count} HA router(s)\n")
    return int(worst_severity(findings))
