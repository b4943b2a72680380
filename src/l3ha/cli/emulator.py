"""``l3ha emulator serve`` and ``l3ha emulator fault``. I/O: signals, stdout.

``serve`` builds and serves an emulated Neutron until Ctrl-C/SIGTERM; its
first line of output is the URL. ``fault`` parses the fault and prints the answer;
``l3ha.emulator.client`` finds the running emulator (``--url``, or a clouds.yaml entry
named by ``--os-cloud``/``OS_CLOUD``) and posts it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

from l3ha.cli.argtypes import non_negative_float, positive_float
from l3ha.errors import BadInputError

DEFAULT_CLOUD = "l3ha-emulator"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "emulator",
        help="run an emulated Neutron API with simulated L3 agents",
        description="A stateful Neutron API emulator with simulated L3 agents, data plane "
        "and faults, for rehearsals and tests.",
    )
    sub = parser.add_subparsers(title="emulator commands", metavar="COMMAND")
    _register_serve(sub)
    _register_fault(sub)
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])


def _register_serve(sub: Any) -> None:
    from l3ha.emulator.faults import FAULT_HELP

    p = sub.add_parser(
        "serve",
        help="build an emulated cloud and serve it until Ctrl-C",
        description="Build an emulated cloud (agents net-1..net-N over AZs az1..azK, routers "
        "router-0001... bound with ports), serve the Neutron API, write a "
        "clouds.yaml entry 'l3ha-emulator' and run until Ctrl-C or SIGTERM. The "
        "first output line is the URL.",
        epilog="scenario steps: " + "; ".join(f"{k} {v}" for k, v in FAULT_HELP.items()),
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument(
        "--port",
        metavar="PORT",
        type=int,
        default=9696,
        help="TCP port, 0 = any free (default 9696)",
    )
    p.add_argument(
        "--agents", metavar="N", type=int, default=10, help="L3 agents net-1..net-N (default 10)"
    )
    p.add_argument("--routers", metavar="N", type=int, default=100, help="routers (default 100)")
    p.add_argument(
        "--busy", metavar="N", type=int, default=0, help="routers tagged l3ha:busy (default 0)"
    )
    p.add_argument(
        "--hot",
        metavar="N",
        type=int,
        default=0,
        help="untagged routers with busy routers' traffic (GET /_emulator/metrics; default 0)",
    )
    p.add_argument("--ha-routers", metavar="N", type=int, default=0, help="HA routers (default 0)")
    p.add_argument(
        "--dvr-routers",
        metavar="N",
        type=int,
        default=0,
        help="distributed routers, hosted by extra dvr_snat agents snat-1.. (default 0)",
    )
    p.add_argument("--azs", metavar="N", type=int, default=1, help="availability zones (default 1)")
    p.add_argument(
        "--report-interval",
        metavar="S",
        type=positive_float,
        default=30.0,
        help="agent heartbeat interval in seconds (default 30)",
    )
    p.add_argument(
        "--agent-down-time",
        metavar="S",
        type=positive_float,
        default=75.0,
        help="heartbeat age after which an agent is dead (default 75)",
    )
    p.add_argument(
        "--seed", metavar="N", type=int, default=0, help="seed of ids and choices (default 0)"
    )
    p.add_argument(
        "--scenario",
        metavar="FILE",
        help="YAML/JSON list of timed faults: [{at: SECONDS, fault: KIND, ...}]",
    )
    p.add_argument(
        "--clouds-yaml",
        metavar="PATH",
        help="where to write the clouds.yaml entry (default $XDG_CONFIG_HOME/l3ha/clouds.yaml)",
    )
    p.add_argument(
        "--keystone", action="store_true", help="serve a minimal Keystone v3 and require its tokens"
    )
    p.add_argument(
        "--neutron-auto-failover",
        action="store_true",
        help="reschedule routers off dead agents like Neutron's allow_automatic_l3agent_failover, "
        "and remove networks from dead DHCP agents like its allow_automatic_dhcp_failover",
    )
    p.add_argument(
        "--no-router-auto-schedule",
        dest="router_auto_schedule",
        action="store_false",
        help="turn off Neutron's router_auto_schedule (on by default, as in Neutron): an "
        "agent's full resync then leaves unhosted routers and short HA routers alone",
    )
    p.add_argument(
        "--dataplane-listeners",
        type=int,
        default=0,
        metavar="N",
        help="TCP listeners on 127.42.x.y for the first N routers, open while they forward; "
        "the API shows them as those routers' gateway addresses",
    )
    p.add_argument(
        "--dataplane-port",
        type=int,
        default=0,
        metavar="PORT",
        help="TCP port every data-plane listener binds (default 0: one free port, shared)",
    )
    p.add_argument(
        "--neutron-move-time",
        metavar="S",
        type=non_negative_float,
        default=0.2,
        help="seconds each --neutron-auto-failover move blocks its pass (DB transaction and "
        "the RPC call to the new agent; default 0.2)",
    )
    p.add_argument(
        "--ha-vrrp-advert-int",
        metavar="S",
        type=non_negative_float,
        default=2.0,
        help="an agent reports a new HA primary this long after the takeover and batches "
        "its reports per interval, as Neutron's ha_vrrp_advert_int (default 2)",
    )
    p.add_argument(
        "--router-base-time",
        metavar="S",
        type=non_negative_float,
        default=3.0,
        help="seconds an agent needs per router, plus 0.25 s per port (default 3)",
    )
    p.add_argument(
        "--router-port-time",
        metavar="S",
        type=non_negative_float,
        default=0.25,
        help="extra seconds per router port (default 0.25)",
    )
    p.add_argument(
        "--agent-concurrency",
        metavar="N",
        type=int,
        default=2,
        help="routers an agent processes at once (default 2)",
    )
    p.add_argument(
        "--port-active-delay",
        metavar="S",
        type=non_negative_float,
        default=1.0,
        help="seconds a router's ports turn ACTIVE after it forwards (default 1)",
    )
    p.add_argument(
        "--broker-reconnect-time",
        metavar="S",
        type=non_negative_float,
        default=1.6,
        help="seconds after a broker outage before the first agent reconnects (default 1.6)",
    )
    p.add_argument(
        "--ha-takeover-time",
        metavar="S",
        type=non_negative_float,
        default=8.8,
        help="seconds before a standby replica takes over (default 8.8)",
    )
    p.add_argument(
        "--agent-capacity",
        metavar="N",
        type=int,
        default=1000,
        help="busy weight an agent carries before its routers stop forwarding "
        "(busy router 10, else 1 or its l3ha:weight=N tag; default 1000)",
    )
    _add_dhcp_options(p)
    _add_ovn_options(p)
    p.set_defaults(func=serve)


def _add_dhcp_options(p: Any) -> None:
    dhcp = p.add_argument_group("DHCP agents and tenant networks")
    dhcp.add_argument(
        "--dhcp-agents",
        metavar="N",
        type=int,
        default=0,
        help="DHCP agents on the L3 agents' hosts net-1..net-N (so kill-agent HOST takes "
        "both down; default 0)",
    )
    dhcp.add_argument(
        "--dhcp-host-prefix",
        metavar="PREFIX",
        default="net",
        help="hosts of the DHCP agents are PREFIX-1.. (default net: the L3 agents' nodes; "
        "another prefix puts them on nodes of their own)",
    )
    dhcp.add_argument(
        "--networks",
        metavar="N",
        type=int,
        default=0,
        help="tenant networks tenant-net-0001.. with a DHCP subnet, each hosted by "
        "--dhcp-agents-per-network DHCP agents (default 0)",
    )
    dhcp.add_argument(
        "--dhcp-agents-per-network",
        metavar="N",
        type=int,
        default=1,
        help="DHCP agents per network, as Neutron's dhcp_agents_per_network (default 1)",
    )
    dhcp.add_argument(
        "--dhcp-network-time",
        metavar="S",
        type=non_negative_float,
        default=1.0,
        help="seconds a DHCP agent needs to set one network up (default 1)",
    )
    dhcp.add_argument(
        "--dhcp-concurrency",
        metavar="N",
        type=int,
        default=4,
        help="networks a DHCP agent sets up at once (neutron's num_sync_threads; default 4)",
    )
    dhcp.add_argument(
        "--no-network-auto-schedule",
        dest="network_auto_schedule",
        action="store_false",
        help="turn off Neutron's network_auto_schedule (on by default): DHCP agent resyncs "
        "and the DHCP failover then leave networks below --dhcp-agents-per-network alone",
    )


def _add_ovn_options(p: Any) -> None:
    ovn = p.add_argument_group("ML2/OVN mode")
    ovn.add_argument(
        "--ovn",
        action="store_true",
        help="an ML2/OVN cloud: no L3 agents; gateway chassis gw-1..N with nb_cfg heartbeats "
        "and per-router HA chassis priorities; faults kill-chassis, revive-chassis, sb-outage",
    )
    ovn.add_argument(
        "--ovn-chassis", metavar="N", type=int, default=3, help="gateway chassis (default 3)"
    )
    ovn.add_argument(
        "--ovn-bfd-detection-time",
        metavar="S",
        type=non_negative_float,
        default=3.0,
        help="seconds before BFD sees a crashed chassis down (default 3)",
    )


def _register_fault(sub: Any) -> None:
    from l3ha.emulator.faults import FAULT_HELP

    p = sub.add_parser(
        "fault",
        help="inject a fault into a running emulator",
        description="Inject a fault into a running emulator.",
        epilog="faults: " + "; ".join(f"{k} {v}" for k, v in FAULT_HELP.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("words", nargs="+", metavar="KIND ARG", help="fault kind and its arguments")
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--os-cloud", metavar="NAME", help="clouds.yaml entry of the emulator (default $OS_CLOUD)"
    )
    where.add_argument("--url", help="the emulator's URL, e.g. http://127.0.0.1:9696/")
    p.set_defaults(func=fault)


# --- serve ------------------------------------------------------------------------


def _config(args: argparse.Namespace) -> Any:
    from l3ha.emulator import EmulatorConfig

    cfg = EmulatorConfig(
        agents=args.agents,
        routers=args.routers,
        busy=args.busy,
        hot=args.hot,
        ha_routers=args.ha_routers,
        dvr_routers=args.dvr_routers,
        azs=args.azs,
        report_interval=args.report_interval,
        agent_down_time=args.agent_down_time,
        seed=args.seed,
        dataplane_listeners=args.dataplane_listeners,
        dataplane_port=args.dataplane_port,
        neutron_move_time=args.neutron_move_time,
        ha_vrrp_advert_int=args.ha_vrrp_advert_int,
        neutron_auto_failover=args.neutron_auto_failover,
        router_auto_schedule=args.router_auto_schedule,
        keystone=args.keystone,
        router_base_time=args.router_base_time,
        router_port_time=args.router_port_time,
        agent_concurrency=args.agent_concurrency,
        port_active_delay=args.port_active_delay,
        broker_reconnect_time=args.broker_reconnect_time,
        ha_takeover_time=args.ha_takeover_time,
        agent_capacity=args.agent_capacity,
        dhcp_agents=args.dhcp_agents,
        dhcp_host_prefix=args.dhcp_host_prefix,
        networks=args.networks,
        dhcp_agents_per_network=args.dhcp_agents_per_network,
        dhcp_network_time=args.dhcp_network_time,
        dhcp_concurrency=args.dhcp_concurrency,
        network_auto_schedule=args.network_auto_schedule,
        ovn=args.ovn,
        ovn_chassis=args.ovn_chassis,
        ovn_bfd_detection_time=args.ovn_bfd_detection_time,
        host=args.host,
        port=args.port,
    )
    try:
        cfg.validate()
    except ValueError as err:
        raise BadInputError(str(err).replace("_", "-")) from None
    for note in cfg.warnings():
        sys.stderr.write(f"l3ha: warning: {note.replace('_', '-')}\n")
    return cfg


def serve(args: argparse.Namespace) -> int:
    from l3ha.emulator import Emulator, FaultError, client
    from l3ha.emulator.faults import load_scenario

    cfg = _config(args)
    steps = []
    if args.scenario:
        try:
            steps = load_scenario(args.scenario)
        except FaultError as err:
            raise BadInputError(err.message) from None
    emu = Emulator(cfg)
    try:
        emu.start()
    except OSError as err:
        raise BadInputError(
            f"cannot listen on {cfg.host}:{cfg.port}: {err.strerror or err}"
        ) from None
    try:
        if steps:
            try:
                emu.schedule_scenario(steps)
            except FaultError as err:
                raise BadInputError(f"scenario: {err.message}") from None
        path = emu.write_clouds_yaml(args.clouds_yaml or client.default_clouds_path())
        with _stop_signals() as stop:  # installed before the URL is out: no early-signal race
            print(emu.url)
            print(f"clouds.yaml: {path}")
            print(f"export OS_CLIENT_CONFIG_FILE={path} OS_CLOUD={DEFAULT_CLOUD}", flush=True)
            while not stop.wait(0.5):
                pass
        sys.stderr.write("l3ha: emulator stopped\n")
    finally:
        emu.stop()
    return 0


@contextlib.contextmanager
def _stop_signals() -> Iterator[threading.Event]:
    """An event set by SIGTERM or SIGINT (also when SIGINT was inherited as ignored)."""
    done = threading.Event()
    previous = {
        sig: signal.signal(sig, lambda *_: done.set()) for sig in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        yield done
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# --- fault ------------------------------------------------------------------------


def fault(args: argparse.Namespace) -> int:
    from l3ha.emulator import FaultError
    from l3ha.emulator.client import post_fault, url_from_clouds
    from l3ha.emulator.faults import fault_from_words

    try:
        parsed = fault_from_words(args.words)
    except FaultError as err:
        raise BadInputError(err.message) from None
    url = args.url or url_from_clouds(args.os_cloud or os.environ.get("OS_CLOUD") or DEFAULT_CLOUD)
    body = json.dumps({"fault": parsed.kind, **parsed.args}).encode()
    result = post_fault(url, body)
    print(" ".join(f"{k}={v}" for k, v in result.items()))
    return 0
