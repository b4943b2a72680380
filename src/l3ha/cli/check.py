"""``l3ha check``: a Nagios/Icinga-style one-line status and exit code. I/O: reads the cloud
and the watch daemon's status file.

Exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (the cloud could not be read, or the
command line or a file it names is wrong: a Nagios plugin's usage error is UNKNOWN,
never a CRITICAL the on-call engineer would chase).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

from l3ha.cli.argtypes import non_negative_int, positive_int
from l3ha.cli.common import add_cloud_options, add_replicas_option, add_snapshot_option
from l3ha.cli.output import emit_document
from l3ha.errors import BadInputError, L3haError, UserError

if TYPE_CHECKING:
    from l3ha.checks import CheckResult

UNKNOWN = 3


def register(sub: Any) -> None:
    """Add ``l3ha check``."""
    p = sub.add_parser(
        "check",
        help="one-line health status for Nagios/Icinga",
        description=(
            "Check for dead agents that host routers, unhosted routers, HA routers with zero "
            "or two active replicas (and lost redundancy), and router-count imbalance; when "
            "'l3ha watch' runs with the same state directory, also its halts (and why; with "
            "--dhcp, its DHCP halts too), "
            "partitioned agents, and whether it is still cycling (a daemon that stopped "
            "cleanly is said in an OK line, a warning with --expect-daemon). Prints one "
            "status line; exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (the cloud cannot be "
            "read, or bad input: an invalid option or file, as Nagios plugins do). On ML2/OVN "
            "it judges the routers' gateway chassis groups instead (--replicas: live chassis "
            "per router)."
        ),
    )
    p.usage_error_code = UNKNOWN  # read by the parser of l3ha.cli.main
    add_cloud_options(p)
    add_snapshot_option(p)
    p.add_argument(
        "--imbalance-threshold",
        type=non_negative_int,
        default=25,
        metavar="PCT",
        help="warn when an agent carries this percent more load than the mean (default: 25)",
    )
    add_replicas_option(p)
    p.add_argument(
        "--dhcp",
        action="store_true",
        help="also audit DHCP: networks without a live DHCP agent, copy counts, dead DHCP "
        "agents hosting networks (see 'l3ha dhcp audit')",
    )
    p.add_argument(
        "--agents-per-network",
        type=positive_int,
        default=1,
        metavar="N",
        help="with --dhcp: live DHCP agents every network should have (default: 1)",
    )
    p.add_argument(
        "--state-dir",
        metavar="DIR",
        help="state directory of 'l3ha watch' whose status to include (default: $L3HA_STATE_DIR, "
        "else $XDG_STATE_HOME/l3ha)",
    )
    add_report_format(p, "problem")
    p.add_argument(
        "--expect-daemon",
        action="store_true",
        help="warn when 'l3ha watch' has stopped or never ran with this state directory",
    )
    p.set_defaults(func=_run_check, usage_error_code=UNKNOWN)


def add_report_format(p: argparse.ArgumentParser, item: str) -> None:
    """``-f/--format`` of a report command (``check``, ``dhcp audit``): the status line,
    or every ``item`` as data."""
    p.add_argument(
        "-f",
        "--format",
        choices=("line", "json", "yaml"),
        default="line",
        help=f"the status line (default), or every {item} as data",
    )


def _run_check(args: argparse.Namespace) -> int:
    """The check; bad input is UNKNOWN (stdout's status line and stderr's error line)."""
    try:
        return _check(args)
    except UserError as exc:
        report_unknown(args, str(exc))
        sys.stderr.write(f"l3ha: error: {exc}\n")
        return UNKNOWN


def report_unknown(args: argparse.Namespace, error: str, title: str = "L3HA") -> int:
    """A report (``check``, ``dhcp audit``) that could not judge: UNKNOWN, and why."""
    if args.format == "line":
        sys.stdout.write(f"{title} UNKNOWN - {error}\n")
    else:
        emit_document({"status": "UNKNOWN", "error": error}, args.format)
    return UNKNOWN


def report(args: argparse.Namespace, result: CheckResult) -> int:
    """Print a report's status line (or its problems as data); its exit code."""
    if args.format == "line":
        sys.stdout.write(result.status_line() + "\n")
    else:
        emit_document(result.document(), args.format)
    return int(result.severity)


def _check(args: argparse.Namespace) -> int:
    from l3ha.checks import run_check
    from l3ha.cli.common import load_weight_policy, open_cloud, read_weighed_world, state_dir
    from l3ha.cli.weighing import check_offline, measure_options
    from l3ha.daemon.status import read_status

    weights = load_weight_policy(args)
    measure_options(args)  # bad input exits 2 with its one-line error, before any read
    check_offline(args)
    if args.dhcp and getattr(args, "snapshot", None):
        raise BadInputError("--dhcp reads the cloud: snapshot files hold no DHCP agents")
    try:
        snapshot, weights = read_weighed_world(args, weights, with_ha_state=True)
    except UserError:
        raise  # a malformed file or option: exit 2, like every command
    except L3haError as exc:  # the cloud cannot be read: UNKNOWN
        return report_unknown(args, str(exc))
    gateways = _gateways(args, snapshot)
    if gateways is not None:
        return report(args, gateways)
    result = run_check(
        snapshot,
        args.imbalance_threshold,
        args.replicas,
        weights,
        watch_status=read_status(state_dir(args)),  # of 'l3ha watch', if it ever ran there
        now=time.time(),
        expect_daemon=args.expect_daemon,
    )
    if args.dhcp:
        from l3ha.cloud.dhcp import NeutronDhcp  # imports openstacksdk: only when asked
        from l3ha.dhcp_audit import audit_dhcp, with_dhcp_findings

        try:
            dhcp = NeutronDhcp(open_cloud(args)).read_dhcp_snapshot()
            result = with_dhcp_findings(result, audit_dhcp(dhcp, args.agents_per_network))
        except UserError:
            raise
        except L3haError as exc:
            return report_unknown(args, f"DHCP: {exc}")
    return report(args, result)


def _gateways(args: argparse.Namespace, snapshot: Any) -> CheckResult | None:
    """On ML2/OVN (no L3 agent, gateway chassis listed): the gateway check's result; on
    ML2/OVN ``--replicas`` counts live chassis per router (``l3ha.ovn_checks``)."""
    from l3ha.cli.ovn import detected_ovn
    from l3ha.ovn_checks import check_gateways

    try:
        ovn = detected_ovn(args, snapshot, ("dhcp",))
        if ovn is None:
            return None
        world = ovn.read_ovn_snapshot()
        ports = ovn.gateway_ports()
    except UserError:
        raise
    except L3haError as exc:
        return _unknown_result(str(exc))
    return check_gateways(world, args.replicas, args.imbalance_threshold, ports)


def _unknown_result(error: str) -> CheckResult:
    from l3ha.checks import CheckResult, Problem
    from l3ha.hastate.audit import Severity

    return CheckResult(Severity.UNKNOWN, (Problem(Severity.UNKNOWN, "unreadable", error),))
