"""``l3ha watch``: the automatic failover daemon. I/O: cloud, journal, coordination, metrics.

Parses the options (flags over ``--config-file`` over ``/etc/l3ha/l3ha.conf``
over defaults, ``l3ha.daemon.settings``), tells the cloud's backend (``--backend``:
L3 agents, or ML2/OVN gateway chassis), builds the daemon's parts and runs
``l3ha.daemon.watch.Watcher``; it decides nothing itself.
"""

from __future__ import annotations

import argparse
import signal
import threading
from typing import Any

from l3ha.cli.common import add_cloud_options, load_weight_policy, open_cloud

DESCRIPTION = (
    "Keep every router on a live L3 agent, automatically and safely. Every --interval "
    "seconds: read the agents' heartbeats, judge each agent from l3ha's own observation "
    "(its heartbeat value changing, on this host's monotonic clock; never the server's "
    "'alive' flag), halt every move while many agents look dead at once (a control-plane "
    "fault) or just after such an outage, and otherwise evacuate dead agents, bind "
    "unhosted routers and replace HA replicas on dead agents, within a move budget. "
    "On ML2/OVN (--backend, told from the agents by default) the agents are the gateway "
    "chassis: a chassis dead beyond --dead-after is taken out of every router's group, so "
    "it cannot fail routers back when it returns, with a replacement at the lowest priority "
    "where a router would keep fewer than --min-chassis live chassis. "
    "Several instances elect one leader (--coordination); the others observe. "
    "SIGTERM finishes the moves in flight and exits; SIGHUP re-reads the configuration."
)


def register(sub: Any) -> None:
    """Add ``l3ha watch``."""
    from l3ha.cli.ovn import add_backend_option
    from l3ha.cli.ovn_actions import add_ovn_options
    from l3ha.daemon.settings import add_watch_arguments

    parser: argparse.ArgumentParser = sub.add_parser(
        "watch", help="the automatic failover daemon", description=DESCRIPTION
    )
    add_cloud_options(parser, api_rate_default=None)  # the api_rate option decides
    add_watch_arguments(parser)
    add_backend_option(parser)
    add_ovn_options(parser)
    parser.add_argument(
        "--member-id",
        metavar="NAME",
        help="this instance's name in leader election (default: HOST-PID)",
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from l3ha.clock import SystemClock
    from l3ha.cloud.dhcp import NeutronDhcp
    from l3ha.daemon.leader import Leadership, default_member_id
    from l3ha.daemon.logevents import configure, event
    from l3ha.daemon.metrics import WatchMetrics, start_metrics_server
    from l3ha.daemon.preflight import check_can_act
    from l3ha.daemon.settings import load_settings
    from l3ha.daemon.watch import Parts, Watcher
    from l3ha.journal import Journal, StartedBy
    from l3ha.ovn_model import DEFAULT_MIN_CHASSIS

    settings = load_settings(args)
    weights = load_weight_policy(args)
    check_can_act(settings)  # exit 2 now rather than fail when a failover is due
    configure(settings.log_format)
    if settings.os_cloud and not getattr(args, "os_cloud", None):
        args.os_cloud = settings.os_cloud
    args.api_rate = settings.api_rate  # --api-rate, else the config file, else its default
    cloud = open_cloud(args)
    ovn = _gateway_cloud(args, settings, cloud)
    clock = SystemClock()
    weigher = _weigher(args, cloud, weights, settings.weights_interval, clock)
    member = args.member_id or default_member_id()
    leadership = Leadership(settings.coordination, member, clock)
    leadership.connect()  # an unreachable coordination service is a one-line error
    metrics = WatchMetrics(member) if settings.metrics_port else None
    server = None
    if metrics is not None:
        server = start_metrics_server(settings.metrics_port, settings.metrics_host, metrics=metrics)
    if server is not None:
        event("metrics", url=server.url)
    try:
        with Journal(settings.state_dir, started_by=StartedBy.DAEMON) as journal:
            parts = Parts(
                settings,
                cloud,
                journal,
                clock,
                leadership=leadership,
                metrics=metrics,
                weights=weights,
                reload=lambda: load_settings(args),
                weigher=weigher,
                dhcp_cloud=NeutronDhcp(cloud),  # used when settings.dhcp is on
                ovn=ovn,
                min_chassis=args.min_chassis or DEFAULT_MIN_CHASSIS,
            )
            watcher = Watcher(parts)
            _install_signals(watcher, settings.shutdown_timeout)
            event("started", member=member, interval=settings.interval, dry_run=settings.dry_run)
            return watcher.run()
    finally:
        leadership.close()
        if server is not None:
            server.stop()


def _gateway_cloud(args: argparse.Namespace, settings: Any, cloud: Any) -> Any:
    """The ML2/OVN reader when ``--backend`` says so or (auto) the agents show it, else None;
    an option for the other backend is one line, exit 2."""
    from l3ha.cli.ovn_actions import gateway_backend
    from l3ha.errors import BadInputError

    ovn = gateway_backend(args, cloud, l3_only=())
    refused = {
        "--dhcp is for DHCP agents: this is an ML2/OVN cloud": settings.dhcp,
        "--dataplane-probe is for L3 agents: this is an ML2/OVN cloud": settings.dataplane_probe,
    }
    for message, given in refused.items():
        if given and ovn is not None:
            raise BadInputError(message)
    return ovn


def _weigher(
    args: argparse.Namespace, cloud: Any, weights: Any, interval: float, clock: Any
) -> Any:
    """The measured weights, read every ``interval`` seconds (None: none asked for)."""
    import logging

    from l3ha.cli.weighing import measure_options
    from l3ha.daemon.logevents import event
    from l3ha.measurement import Weigher

    options = measure_options(args)
    if not options.enabled:
        return None
    return Weigher(
        options,
        cloud,
        weights,
        interval=interval,
        clock=clock,
        warn=lambda text: event("weights_warning", logging.WARNING, message=text),
    )


def _install_signals(watcher: Any, shutdown_timeout: float) -> None:
    """SIGTERM/SIGINT stop (moves in flight finish, bounded); SIGHUP reloads."""

    def stop(signum: int, _frame: object) -> None:
        watcher.request_stop()
        _exit_after(shutdown_timeout)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGHUP, lambda _s, _f: watcher.request_reload())


def _exit_after(seconds: float) -> None:
    """Bound the shutdown: exit anyway once ``seconds`` have passed (the journal keeps
    whatever was cut short for the next leader)."""

    def expire() -> None:
        import os

        from l3ha.daemon.logevents import event

        event("shutdown_timeout", seconds=seconds)
        os._exit(1)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
