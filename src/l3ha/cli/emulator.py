"""``l3ha emulator serve`` and ``l3ha emulator fault``. I/O: signals, stdout.

``serve`` builds and serves an emulated Neutron until Ctrl-C/SIGTERM; its
first line of output is the URL. ``fault`` parses the fault and prints the answer;
``l3ha.emulator.client`` finds the running emulator (``--url``, or a clouds.yaml entry
named by ``--os-cloud``/``OS_CLOUD``) and posts it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

from l3ha.cli.argtypes import add_count, add_seconds, positive_float
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
    add_count(p, "--port", 9696, "TCP port, 0 = any free (default 9696)", metavar="PORT")
    add_count(p, "--agents", 10, "L3 agents net-1..net-N (default 10)")
    add_count(p, "--routers", 100, "routers (default 100)")
    add_count(p, "--busy", 0, "routers tagged l3ha:busy (default 0)")
    add_count(
        p,
        "--hot",
        0,
        "untagged routers with busy routers' traffic (GET /_emulator/metrics; default 0)",
    )
    add_count(p, "--ha-routers", 0, "HA routers (default 0)")
    add_count(
        p,
        "--dvr-routers",
        0,
        "distributed routers, hosted by extra dvr_snat agents snat-1.. (default 0)",
    )
    add_count(p, "--azs", 1, "availability zones (default 1)")
    add_seconds(
        p,
        "--report-interval",
        30.0,
        "agent heartbeat interval in seconds (default 30)",
        kind=positive_float,
    )
    add_seconds(
        p,
        "--agent-down-time",
        75.0,
        "heartbeat age after which an agent is dead (default 75)",
        kind=positive_float,
    )
    add_count(p, "--seed", 0, "seed of ids and choices (default 0)")
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
    add_count(
        p,
        "--dataplane-listeners",
        0,
        "TCP listeners on 127.42.x.y for the first N routers, open while they forward; "
        "the API shows them as those routers' gateway addresses",
    )
    add_count(
        p,
        "--dataplane-port",
        0,
        "TCP port every data-plane listener binds (default 0: one free port, shared)",
        metavar="PORT",
    )
    add_seconds(
        p,
        "--neutron-move-time",
        0.2,
        "seconds each --neutron-auto-failover move blocks its pass (DB transaction and "
        "the RPC call to the new agent; default 0.2)",
    )
    add_seconds(
        p,
        "--ha-vrrp-advert-int",
        2.0,
        "an agent reports a new HA primary this long after the takeover and batches "
        "its reports per interval, as Neutron's ha_vrrp_advert_int (default 2)",
    )
    add_seconds(
        p,
        "--router-base-time",
        3.0,
        "seconds an agent needs per router, plus 0.25 s per port (default 3)",
    )
    add_seconds(p, "--router-port-time", 0.25, "extra seconds per router port (default 0.25)")
    add_count(p, "--agent-concurrency", 2, "routers an agent processes at once (default 2)")
    add_seconds(
        p,
        "--port-active-delay",
        1.0,
        "seconds a router's ports turn ACTIVE after it forwards (default 1)",
    )
    add_seconds(
        p,
        "--broker-reconnect-time",
        1.6,
        "seconds after a broker outage before the first agent reconnects (default 1.6)",
    )
    add_seconds(
        p, "--ha-takeover-time", 8.8, "seconds before a standby replica takes over (default 8.8)"
    )
    add_count(
        p,
        "--agent-capacity",
        1000,
        "busy weight an agent carries before its routers stop forwarding "
        "(busy router 10, else 1 or its l3ha:weight=N tag; default 1000)",
    )
    _add_dhcp_options(p)
    _add_ovn_options(p)
    p.set_defaults(func=serve)


def _add_dhcp_options(p: Any) -> None:
    dhcp = p.add_argument_group("DHCP agents and tenant networks")
    add_count(
        dhcp,
        "--dhcp-agents",
        0,
        "DHCP agents on the L3 agents' hosts net-1..net-N (so kill-agent HOST takes "
        "both down; default 0)",
    )
    dhcp.add_argument(
        "--dhcp-host-prefix",
        metavar="PREFIX",
        default="net",
        help="hosts of the DHCP agents are PREFIX-1.. (default net: the L3 agents' nodes; "
        "another prefix puts them on nodes of their own)",
    )
    add_count(
        dhcp,
        "--networks",
        0,
        "tenant networks tenant-net-0001.. with a DHCP subnet, each hosted by "
        "--dhcp-agents-per-network DHCP agents (default 0)",
    )
    add_count(
        dhcp,
        "--dhcp-agents-per-network",
        1,
        "DHCP agents per network, as Neutron's dhcp_agents_per_network (default 1)",
    )
    add_seconds(
        dhcp,
        "--dhcp-network-time",
        1.0,
        "seconds a DHCP agent needs to set one network up (default 1)",
    )
    add_count(
        dhcp,
        "--dhcp-concurrency",
        4,
        "networks a DHCP agent sets up at once (neutron's num_sync_threads; default 4)",
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
    add_count(ovn, "--ovn-chassis", 3, "gateway chassis (default 3)")
    add_seconds(
        ovn,
        "--ovn-bfd-detection-time",
        3.0,
        "seconds before BFD sees a crashed chassis down (default 3)",
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

    # every option of ``serve`` that names a field of the configuration sets it
    fields = {field.name for field in dataclasses.fields(EmulatorConfig)}
    cfg = EmulatorConfig(**{k: v for k, v in vars(args).items() if k in fields})
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
