"""``l3ha lab up|status|fail|recover|down``: keepalived VRRP in namespaces. I/O: see l3ha.lab.

Needs root and the keepalived/iproute2 packages. Every lab command takes
``--name`` (default ``main``) and ``--state-dir`` (default under the runtime
dir), so several labs can run side by side.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from l3ha.cli.argtypes import positive_float, positive_int
from l3ha.cli.common import command_group
from l3ha.cli.output import add_format_options, emit

LAB_HELP = "a real keepalived (VRRPv3) data plane in network namespaces, for HA tests"


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--name",
        default="main",
        help="lab name (1-16 lowercase letters/digits); namespaces are l3ha-lab-NAME-* "
        "(default: main)",
    )
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        help="where the lab records what it started (default: $XDG_RUNTIME_DIR or /run, "
        "then l3ha/lab/NAME)",
    )


def _state_dir(args: argparse.Namespace) -> Path:
    from l3ha.lab.lab import default_state_dir
    from l3ha.lab.topology import check_lab_name

    check_lab_name(args.name)
    return Path(args.state_dir) if args.state_dir else default_state_dir(args.name)


def register(subparsers: Any) -> None:
    """Add the ``l3ha lab`` commands."""
    group = command_group(subparsers, "lab", LAB_HELP)
    up = group.add_parser(
        "up",
        help="create the namespaces, start keepalived and the monitors, wait until settled",
        description=(
            "Create one namespace per network node (n1..nN), a client namespace and a bridge "
            "namespace joining them with veth pairs (addresses in 169.254.0.0/16 only). Each "
            "node runs keepalived with one VRRPv3 instance per lab router (state BACKUP, "
            "nopreempt, rotated priorities; VIP of rK is 169.254.100.K/24) and one "
            "'l3ha ha monitor' per router. Returns when every router has one VIP holder."
        ),
    )
    _add_common(up)
    up.add_argument("--nodes", type=positive_int, default=3, help="network nodes, 2-9 (default: 3)")
    up.add_argument("--routers", type=positive_int, default=2, help="lab routers (default: 2)")
    up.add_argument(
        "--advert-int",
        type=positive_float,
        default=1.0,
        metavar="SECONDS",
        help="VRRP advertisement interval, 0.01-40 in hundredths (default: 1)",
    )
    up.add_argument(
        "--no-heal-garp",
        dest="heal_garp",
        action="store_false",
        help="like Neutron's keepalived.conf: no gratuitous ARP when a split brain heals",
    )
    up.add_argument("--exec", dest="hook", metavar="CMD", help="--exec hook for every monitor")
    up.add_argument(
        "--settle-timeout",
        type=positive_float,
        default=60.0,
        metavar="SECONDS",
        help="give up (and tear down) if not settled in this time (default: 60)",
    )
    up.set_defaults(func=up_command)

    status = group.add_parser(
        "status",
        help="per lab router: the node holding its VIP and what each node's monitor reports",
        description=(
            "HOLDER is read from the namespaces (the nodes that have the VIP right now); the "
            "per-node columns are what that node's 'l3ha ha monitor' last reported."
        ),
    )
    _add_common(status)
    add_format_options(status)
    status.set_defaults(func=status_command)

    for verb, text in (
        ("fail", "cut NODE's link (a dead node: its veth leaves the bridge)"),
        ("recover", "put NODE's link back on the bridge"),
    ):
        parser = group.add_parser(verb, help=text, description=text)
        _add_common(parser)
        parser.add_argument("node", metavar="NODE", help="n1, n2, ...")
        parser.set_defaults(func=link_command, verb=verb)

    down = group.add_parser(
        "down",
        help="stop every process and delete every namespace of the lab (also after a crash)",
        description=(
            "Stop the processes recorded in the state dir and every process inside the "
            "lab's namespaces (l3ha-lab-NAME-*), then delete those namespaces. Works without "
            "the state dir, e.g. after a crash."
        ),
    )
    _add_common(down)
    down.set_defaults(func=down_command)


def up_command(args: argparse.Namespace) -> int:
    from l3ha.lab.lab import lab_up
    from l3ha.lab.topology import LabSpec

    spec = LabSpec(args.name, args.nodes, args.routers, args.advert_int, args.heal_garp)
    lab = lab_up(spec, _state_dir(args), args.hook, args.settle_timeout)
    sys.stdout.write(
        f"lab {spec.name} up: nodes {', '.join(spec.node_names)}; routers "
        f"{', '.join(spec.router_names)}; state in {lab.dir}\n"
    )
    return 0


STATUS_COLUMNS = ("router", "vip", "holder")


def status_command(args: argparse.Namespace) -> int:
    from l3ha.lab.lab import open_lab

    lab = open_lab(args.name, _state_dir(args))
    rows = lab.status_rows()
    per_node = lab.spec.node_names if args.format == "table" else ("holders", "monitors")
    emit(rows, args.format, args.column, [*STATUS_COLUMNS, *per_node, "cut"], options=args)
    return 0


def link_command(args: argparse.Namespace) -> int:
    """``l3ha lab fail|recover NODE``: cut NODE's link or put it back."""
    from l3ha.lab.lab import open_lab

    lab = open_lab(args.name, _state_dir(args))
    (lab.fail if args.verb == "fail" else lab.recover)(args.node)
    sys.stdout.write(f"{args.node}: link {'cut' if args.verb == 'fail' else 'restored'}\n")
    return 0


def down_command(args: argparse.Namespace) -> int:
    from l3ha.lab.lab import lab_down

    state_dir = _state_dir(args)
    report = lab_down(args.name, state_dir)
    if report.foreign_state is not None:
        sys.stderr.write(
            f"l3ha: note: {state_dir} records lab {report.foreign_state!r}, not "
            f"{args.name!r}; left it and its processes alone\n"
        )
    sys.stdout.write(
        f"lab {args.name} down: stopped {len(report.processes)} processes "
        f"({len(report.killed_hard)} killed hard), removed {len(report.namespaces)} namespaces\n"
    )
    return 0
