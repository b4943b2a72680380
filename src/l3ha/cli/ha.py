"""``l3ha ha monitor`` and ``l3ha ha watch-socket``: the ordered VIP state monitor. I/O: hastate.

The ``ha`` group is shared (``command_group``): other modules add their own
subcommands (``audit``, ``repair``) to it from their ``register`` function, or
by calling ``add_monitor_commands`` style functions on the same group.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from l3ha.cli.argtypes import add_count, add_seconds, non_negative_int, positive_float
from l3ha.cli.common import command_group

HA_HELP = "HA (VRRP) routers: state audit and repair, the ordered VIP state monitor"


def register(subparsers: Any) -> None:
    """Add ``l3ha ha monitor`` and ``l3ha ha watch-socket``."""
    group = command_group(subparsers, "ha", HA_HELP)
    add_monitor_command(group)
    add_watch_socket_command(group)


def add_monitor_command(group: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``l3ha ha monitor``."""
    parser = group.add_parser(
        "monitor",
        help="report master/backup of one VRRP router from its VIP, in order",
        description=(
            "Watch the VIP on DEV inside namespace NS through netlink address events "
            "(subscribed before the current addresses are read, so nothing is missed) and "
            "report 'master' while the VIP is there and 'backup' while it is not. Each "
            "transition gets a sequence number, monotonic and wall time and the random id of "
            "this monitor run (numbers continue across restarts only with --state-file); it "
            "is written to "
            "the state file atomically (never backwards), sent as a JSON line to every "
            "socket client (new clients first get the current state), printed on stdout, "
            "and passed to the --exec hook (one at a time; a hook for a transition already "
            "superseded is skipped). This replaces keepalived notify scripts. Stops cleanly "
            "on SIGTERM or Ctrl-C."
        ),
    )
    parser.add_argument("--netns", metavar="NS", help="network namespace (default: current)")
    parser.add_argument("--device", required=True, metavar="DEV", help="HA interface")
    parser.add_argument("--vip", required=True, metavar="CIDR", help="the VIP, e.g. 169.254.0.1/24")
    parser.add_argument("--state-file", metavar="FILE", help="JSON file with the latest transition")
    parser.add_argument("--socket", metavar="PATH", help="unix socket streaming JSON lines")
    parser.add_argument(
        "--exec",
        dest="exec_command",
        metavar="CMD",
        help="hook run per transition with STATE SEQ appended and L3HA_* variables set",
    )
    add_seconds(
        parser,
        "--exec-timeout",
        60.0,
        "kill a hook running longer than this (default: 60)",
        kind=positive_float,
        metavar="SECONDS",
    )
    parser.set_defaults(func=monitor_command)


def monitor_command(args: argparse.Namespace) -> int:
    from l3ha.hastate.monitor import MonitorConfig, run_monitor
    from l3ha.hastate.vipstate import parse_vip

    config = MonitorConfig(
        netns=args.netns,
        device=args.device,
        vip=parse_vip(args.vip),
        state_file=Path(args.state_file) if args.state_file else None,
        socket_path=Path(args.socket) if args.socket else None,
        exec_command=args.exec_command,
        exec_timeout=args.exec_timeout,
    )
    return run_monitor(config)


def add_watch_socket_command(group: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``l3ha ha watch-socket``."""
    parser = group.add_parser(
        "watch-socket",
        help="print the transitions of a running 'l3ha ha monitor', in order",
        description=(
            "Connect to the unix socket of 'l3ha ha monitor' and print each transition whose "
            "sequence number is higher than every one printed before in the same monitor run. "
            "When the socket goes away, reconnect (at most --retries failed attempts in a "
            "row). When the monitor restarted (a new run id; without --state-file it numbers "
            "from 1 again) the order starts over and a note says so on stderr."
        ),
    )
    parser.add_argument("path", metavar="PATH", help="the monitor's --socket path")
    add_count(parser, "--retries", 10, "reconnect attempts (default: 10)", kind=non_negative_int)
    add_seconds(
        parser,
        "--retry-interval",
        0.5,
        "pause between reconnect attempts (default: 0.5)",
        kind=positive_float,
        metavar="SECONDS",
    )
    add_count(parser, "--count", 0, "exit after N transitions (0: never)", kind=non_negative_int)
    parser.add_argument(
        "-f", "--format", choices=("text", "json"), default="text", help="output format"
    )
    parser.set_defaults(func=watch_socket_command)


def watch_socket_command(args: argparse.Namespace) -> int:
    from l3ha.hastate.consumer import SocketWatcher
    from l3ha.hastate.vipstate import Transition

    def on_new_run(old_run: str, first: Transition) -> None:
        sys.stderr.write(
            f"l3ha: note: monitor restarted (run {old_run or '-'} -> {first.run or '-'}); "
            f"following its numbering from seq {first.seq}\n"
        )
        sys.stderr.flush()

    watcher = SocketWatcher(
        Path(args.path), args.retries, args.retry_interval, on_new_run=on_new_run
    )
    for shown, received in enumerate(watcher.transitions(), start=1):
        if args.format == "json":
            line = json.dumps(received.document, sort_keys=True)
        else:
            t = received.transition
            line = f"{t.seq}\t{t.state.value}\t{t.wall.isoformat()}"
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        if args.count and shown >= args.count:
            return 0
    return 0
