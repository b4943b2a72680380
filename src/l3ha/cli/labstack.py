"""``l3ha lab stack up|down|fault``: a real Neutron with real agents. I/O: see l3ha.lab.stack.

Needs root, the Debian packages of scripts/install-system-deps.sh and the Neutron
virtualenv (``L3HA_NEUTRON_PYTHON``, default ./.venv-neutron/bin/python). Every
command takes ``--dir`` (default /run/l3ha/stack), where the stack keeps its
state, configuration and logs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from l3ha.cli.argtypes import positive_float, positive_int
from l3ha.cli.common import command_group
from l3ha.cli.lab import LAB_HELP

STACK_HELP = "a real Neutron (MariaDB, RabbitMQ, Open vSwitch, L3 agents) in namespaces"


def _add_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dir",
        metavar="DIR",
        default="/run/l3ha/stack",
        help="the stack's own directory (default: /run/l3ha/stack)",
    )


def _non_negative_int(text: str) -> int:
    value = int(text) if text.isdigit() else -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return value


def register(subparsers: Any) -> None:
    """Add ``l3ha lab stack ...``."""
    lab = command_group(subparsers, "lab", LAB_HELP)
    group = command_group(lab, "stack", STACK_HELP)
    up = group.add_parser(
        "up",
        help="bring a stack up and print its clouds.yaml entry",
        description=(
            "Start MariaDB, RabbitMQ, the Neutron API (127.0.0.1) and RPC servers, and per "
            "network node (namespace l3rs-nK) Open vSwitch, the OVS agent and an L3 agent. "
            "Each router gets a VLAN tenant network and a VM namespace (l3rs-vmK); the "
            "external network reaches namespace l3rs-client. Returns when every VM reaches "
            "its router; a failed bring-up removes what it made."
        ),
    )
    _add_dir(up)
    up.add_argument(
        "--nodes",
        type=positive_int,
        help="network nodes, 1-8 (with --ovn: gateway chassis, default 3)",
    )
    up.add_argument(
        "--routers", type=_non_negative_int, required=True, help="routers, 0-90 (with --ovn 0-255)"
    )
    up.add_argument(
        "--ha-routers",
        type=_non_negative_int,
        default=0,
        help="how many of the routers are HA (VRRP) routers (default: 0)",
    )
    up.add_argument("--dhcp", action="store_true", help="also run a DHCP agent per node")
    up.add_argument(
        "--report-interval",
        type=positive_int,
        default=5,
        metavar="SECONDS",
        help="agents' report_interval (default: 5)",
    )
    up.add_argument(
        "--agent-down-time",
        type=positive_int,
        default=15,
        metavar="SECONDS",
        help="Neutron's agent_down_time (default: 15)",
    )
    up.add_argument(
        "--neutron-failover",
        action="store_true",
        help="allow_automatic_l3agent_failover = True (Neutron's own rescheduler)",
    )
    up.add_argument(
        "--ovn",
        action="store_true",
        help="an ML2/OVN cloud instead: OVN central, Neutron ML2/OVN, NODES gateway chassis "
        "(namespaces l3ov-gwK, ovn-controller each), no RabbitMQ or agents",
    )
    up.set_defaults(func=up_command)

    down = group.add_parser(
        "down",
        help="stop every process and remove every namespace and file of the stack",
        description="Works after a crash too: finds processes by the stack's directory and "
        "namespaces by the l3rs- prefix.",
    )
    _add_dir(down)
    down.add_argument(
        "--ovn", action="store_true", help="an OVN stack's leftovers (l3ov-) without its state file"
    )
    down.set_defaults(func=down_command)

    fault = command_group(group, "fault", "inject a fault into the running stack")
    outage = fault.add_parser("broker-outage", help="stop RabbitMQ for SECONDS, then start it")
    outage.add_argument("seconds", type=positive_float, metavar="SECONDS")
    outage.set_defaults(func=broker_outage_command)
    sb_outage = fault.add_parser(
        "sb-outage", help="OVN stack: stop the southbound ovsdb-server for SECONDS, then start it"
    )
    sb_outage.add_argument("seconds", type=positive_float, metavar="SECONDS")
    sb_outage.set_defaults(func=sb_outage_command)
    for verb, text in (
        ("kill-node", "the node dies: its links cut, its agents and Open vSwitch killed (-9)"),
        (
            "restart-agents",
            "stop the node's agents (SIGTERM; on OVN its ovn-controller) and start them again",
        ),
        ("revive-node", "the node boots again: Open vSwitch and agents started, links back"),
    ):
        parser = fault.add_parser(verb, help=text, description=text)
        parser.add_argument("host", metavar="HOST", help="l3rs-n1, l3rs-n2, ... (or n1, n2)")
        parser.set_defaults(func=node_fault_command, verb=verb, with_ovs=False)
        if verb == "restart-agents":
            parser.add_argument(
                "--with-ovs",
                action="store_true",
                help="also restart the node's ovs-vswitchd (an OVS upgrade)",
            )
    for parser in fault.choices.values():
        _add_dir(parser)


def up_command(args: argparse.Namespace) -> int:
    from l3ha.lab.stack.spec import StackSpec

    if args.ovn:
        return _ovn_up(args)
    if args.nodes is None:
        from l3ha.errors import BadInputError

        raise BadInputError("--nodes is required (only --ovn has a default, 3)")
    from l3ha.lab.stack.stack import stack_up

    spec = StackSpec(
        args.nodes,
        args.routers,
        args.ha_routers,
        args.dhcp,
        args.report_interval,
        args.agent_down_time,
        args.neutron_failover,
    )
    stack = stack_up(spec, Path(args.dir))
    sys.stderr.write(
        f"stack up: {len(spec.hosts)} nodes, {spec.routers} routers; state in {args.dir}\n"
    )
    sys.stdout.write(stack.clouds_yaml())
    return 0


def down_command(args: argparse.Namespace) -> int:
    from l3ha.lab.stack.ovnstack import is_ovn_stack, ovn_teardown
    from l3ha.lab.stack.teardown import teardown

    ovn = args.ovn or is_ovn_stack(Path(args.dir))
    report = (ovn_teardown if ovn else teardown)(Path(args.dir))
    sys.stdout.write(
        f"stack down: stopped {len(report.processes)} processes, removed "
        f"{len(report.namespaces)} namespaces\n"
    )
    return 0


def broker_outage_command(args: argparse.Namespace) -> int:
    from l3ha.lab.stack.stack import open_stack

    stopped, ready = open_stack(Path(args.dir)).broker_outage(args.seconds)
    sys.stdout.write(f"broker stopped for {ready - stopped:.1f} s (until it listened again)\n")
    return 0


def node_fault_command(args: argparse.Namespace) -> int:
    """A node fault on the stack in ``--dir``, ML2/OVS or OVN."""
    from l3ha.lab.stack.ovnstack import is_ovn_stack, open_ovn_stack
    from l3ha.lab.stack.stack import open_stack

    directory = Path(args.dir)
    stack = open_ovn_stack(directory) if is_ovn_stack(directory) else open_stack(directory)
    if args.verb == "restart-agents":
        stack.restart_agents(args.host, with_ovs=args.with_ovs)
    elif args.verb == "kill-node":
        stack.kill_node(args.host)
    else:
        stack.revive_node(args.host)
    sys.stdout.write(f"{args.host}: {args.verb} done\n")
    return 0


def _ovn_up(args: argparse.Namespace) -> int:
    from l3ha.errors import BadInputError
    from l3ha.lab.stack.ovnspec import DEFAULT_CHASSIS, OvnSpec
    from l3ha.lab.stack.ovnstack import ovn_stack_up

    if args.ha_routers or args.dhcp or args.neutron_failover:
        raise BadInputError("--ovn takes no --ha-routers, --dhcp or --neutron-failover")
    spec = OvnSpec(args.nodes or DEFAULT_CHASSIS, args.routers, args.agent_down_time)
    stack = ovn_stack_up(spec, Path(args.dir))
    sys.stderr.write(
        f"OVN stack up: {spec.chassis} gateway chassis, {spec.routers} routers; "
        f"state in {args.dir}\n"
    )
    sys.stdout.write(stack.clouds_yaml())
    return 0


def sb_outage_command(args: argparse.Namespace) -> int:
    from l3ha.lab.stack.ovnstack import open_ovn_stack

    open_ovn_stack(Path(args.dir)).sb_outage(args.seconds)
    sys.stdout.write(f"southbound database stopped for {args.seconds:.1f} s, started again\n")
    return 0
