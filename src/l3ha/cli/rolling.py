"""``l3ha rolling``: drain, upgrade and restore network nodes one at a time.

I/O: argv, stdin (the answer to ``--pause``), stdout/stderr. The operation
is ``l3ha.operations.rolling`` (its ``session`` checks, runs and resumes it);
this module turns options into a ``RollingRequest``, asks the ``--pause``
question and prints progress, the command output and the summary.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from l3ha.cli.argtypes import non_negative_float, positive_float
from l3ha.cli.common import add_cloud_options, load_weight_policy, open_cloud, state_dir
from l3ha.cli.execution import add_execution_options, executor_options
from l3ha.cli.output import emit, emit_document
from l3ha.cli.planning import add_placement_options, placement_request
from l3ha.cli.probe import add_target_options, collect_targets, prepare_output
from l3ha.errors import BadInputError

if TYPE_CHECKING:
    from l3ha.operations.rolling import RollingReport, RollingRequest
    from l3ha.operations.rolling.session import RunShape

DESCRIPTION = """\
Take network nodes out of service one at a time, run the maintenance command
on each (an upgrade), and give each its routers back only once its agent has
proven healthy. Per host, in order:

  1. drain: disable its L3 agent after moving its legacy routers away and
     replacing its HA replicas (waiting until the moved routers' ports are ACTIVE);
  2. the upgrade step, one of (required):
       --run COMMAND  run it (split with shell-like quoting, {host} substituted,
                      no shell unless --shell; output streamed and kept in the
                      journal); a non-zero exit stops the run;
       --pause        wait for the operator: type 'continue' at the prompt (read
                      from stdin, a line at a time when it is not a terminal);
                      'stop' or the end of input stops the run, the host kept
                      drained, and --resume asks again;
       --no-run       nothing: a rehearsal of drain, proof and restore;
  3. wait until the agent has been continuously alive for --stable-for seconds,
     judged by l3ha's own observation of its heartbeat changing (a restarted
     agent shows a new started_at; one started while the message bus is down
     never reports and never proves stable);
  4. canary: enable the agent, move one router onto it and require its ports
     ACTIVE within --canary-timeout (and its address answering, when the probe
     watches it with --probe-routers);
  5. undrain it.

A host's DHCP agent, when it has one, takes the same steps next to its L3
agent through l3ha's DHCP operations (make before break: no network is ever
without a live DHCP agent): its networks move away before the command, its
heartbeat must prove stable after it, one network returns as its canary
(DHCP port ACTIVE within --canary-timeout), and the restore gives it back
the rest of the networks it served.

A host that fails a step is left drained and the run stops with the reason.
The probe (targets as in 'l3ha probe', and/or the routers' own addresses)
runs through the whole operation; an outage longer than --max-outage stops
the run before the next host. Every step is journalled; --resume continues a
stopped or killed run from its first unfinished step. Exit codes: 0 done, 1
stopped (see the reason), 2 bad input.
"""

EXAMPLE = """\
example:
  l3ha rolling --hosts net-1,net-2,net-3 \\
      --run 'ssh {host} sudo apt-get -y install --only-upgrade neutron-l3-agent' \\
      --stable-for 90 --probe-routers tcp:22 --max-outage 10 --rebalance-after
"""


def register(sub: Any) -> None:
    """Add ``l3ha rolling``."""
    p = sub.add_parser(
        "rolling",
        help="drain, upgrade and restore network nodes one at a time",
        description=DESCRIPTION,
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--hosts", metavar="HOST[,HOST...]", help="the hosts, in order")
    _add_step_options(p)
    add_target_options(p)
    _add_guard_options(p)
    p.add_argument("--rebalance-after", action="store_true", help="even the load at the end")
    p.add_argument("--resume", action="store_true", help="continue the last stopped run")
    add_placement_options(p, targets=False)
    add_execution_options(p)
    add_cloud_options(p)
    p.set_defaults(func=run_rolling_command, finishes_interrupted=True)


def _add_step_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("steps")
    upgrade = g.add_mutually_exclusive_group()
    upgrade.add_argument("--run", metavar="'CMD {host}'",
                         help="the maintenance command of each drained host")  # fmt: skip
    upgrade.add_argument("--pause", action="store_true",
                         help="after each drain, wait for the operator's 'continue'")  # fmt: skip
    upgrade.add_argument("--no-run", action="store_true",
                         help="a rehearsal: drain, prove stable, restore; run nothing")  # fmt: skip
    g.add_argument("--shell", action="store_true", help="run --run through /bin/sh -c")
    g.add_argument("--run-timeout", type=positive_float, default=3600.0, metavar="S",
                   help="kill the command after this long (default 3600)")  # fmt: skip
    g.add_argument("--stable-for", type=positive_float, default=60.0, metavar="S",
                   help="seconds the agent must stay alive after it (default 60)")  # fmt: skip
    g.add_argument("--stable-timeout", type=positive_float, metavar="S",
                   help="give up waiting for that after this long (default: --stable-for "
                   "plus two --dead-after)")  # fmt: skip
    g.add_argument("--dead-after", type=positive_float, default=75.0, metavar="S",
                   help="Neutron's agent_down_time (default 75)")  # fmt: skip
    g.add_argument("--report-interval", type=positive_float, default=30.0, metavar="S",
                   help="Neutron's report_interval: a heartbeat is missed after --dead-after "
                   "minus this (default 30)")  # fmt: skip
    g.add_argument("--poll-interval", type=positive_float, default=1.0, metavar="S",
                   help="seconds between looks at the agent (default 1)")  # fmt: skip
    g.add_argument("--canary", metavar="ROUTER",
                   help="the canary router (default: the first legacy router drained from "
                   "the host)")  # fmt: skip
    g.add_argument("--canary-timeout", type=positive_float, default=120.0, metavar="S",
                   help="the canary's ports must be ACTIVE within this (default 120)")  # fmt: skip


def _add_guard_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("tenant-traffic guard")
    g.add_argument("--probe-routers", metavar="tcp:PORT|icmp",
                   help="also probe every router's external gateway address")  # fmt: skip
    g.add_argument("--probe-interval", type=positive_float, default=0.5, metavar="S",
                   help="seconds between samples of one target (default 0.5)")  # fmt: skip
    g.add_argument("--probe-timeout", type=positive_float, default=1.0, metavar="S",
                   help="a sample taking longer fails (default 1)")  # fmt: skip
    g.add_argument("--max-outage", type=non_negative_float, metavar="S",
                   help="stop before the next host once any target was down longer")  # fmt: skip
    g.add_argument("--output", type=Path, metavar="DIR",
                   help="probe report directory (default: STATE_DIR/rolling-RUN)")  # fmt: skip


# --- running ------------------------------------------------------------------------

CONTINUE = ("continue", "c", "yes", "y")
STOP = ("stop", "s", "no", "n")


def _to_stderr(line: str) -> None:
    """A progress line. A reader of stderr that went away (``2>&1 | head``) must not stop a
    run half way with a host drained: the run goes on, and the journal keeps every line."""
    try:
        sys.stderr.write(line)
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):  # ValueError: a stream already closed
        pass


def _say(text: str) -> None:
    _to_stderr(f"l3ha: {text}\n")


def _output_line(text: str) -> None:
    """A line of a host's command output (stderr: stdout carries only the summary)."""
    _to_stderr(f"  {text}\n")


def _ask_continue(host: str) -> bool:
    """``--pause``: a prompt on a terminal, else a line of stdin; the end of input stops."""
    terminal = sys.stdin.isatty()
    _say(f"{host} is drained: do its maintenance, then answer 'continue' (or 'stop')")
    while True:
        if terminal:
            _to_stderr(f"continue with {host}? [continue/stop] ")
        line = sys.stdin.readline()
        if not line:
            return False
        answer = line.strip().lower()
        if answer in CONTINUE or answer in STOP:
            return answer in CONTINUE
        _say(f"answer 'continue' or 'stop', not {answer!r}")


def _given_shape(args: argparse.Namespace) -> RunShape:
    from l3ha.operations.rolling import UpgradeStep
    from l3ha.operations.rolling.session import RunShape

    if args.shell and args.run is None:
        raise BadInputError("--shell goes with --run")
    upgrade = None
    if args.run is not None:
        upgrade = UpgradeStep.RUN
    elif args.pause:
        upgrade = UpgradeStep.PAUSE
    elif args.no_run:
        upgrade = UpgradeStep.REHEARSAL
    hosts = tuple(h.strip() for h in (args.hosts or "").split(",") if h.strip())
    return RunShape(hosts, upgrade, args.run, args.shell)


def build_request(args: argparse.Namespace, shape: RunShape) -> RollingRequest:
    """The request of the options and the run's shape (hosts, upgrade step)."""
    from l3ha.health import HealthPolicy
    from l3ha.operations.rolling import RollingRequest, UpgradeStep

    if args.no_wait:
        raise BadInputError("--no-wait: a rolling run always waits for the ports to be ACTIVE")
    if args.report_interval >= args.dead_after:
        raise BadInputError("--report-interval must be shorter than --dead-after")
    return RollingRequest(
        hosts=shape.hosts,
        upgrade=shape.upgrade or UpgradeStep.REHEARSAL,
        command=shape.command,
        shell=shape.shell,
        run_timeout=args.run_timeout,
        stable_for=args.stable_for,
        stable_timeout=args.stable_timeout,
        poll_interval=args.poll_interval,
        canary=args.canary,
        canary_timeout=args.canary_timeout,
        max_outage=args.max_outage,
        rebalance_after=args.rebalance_after,
        health=HealthPolicy(agent_down_time=args.dead_after, report_interval=args.report_interval),
        execution=executor_options(args),
        placement=placement_request(args),
        weights=load_weight_policy(args),
    )


def run_rolling_command(args: argparse.Namespace) -> int:
    """Run (or resume) the rolling maintenance; print the summary; 0 done, 1 stopped."""
    from l3ha.operations.rolling import session

    journal_dir = state_dir(args)
    if args.dry_run and args.resume:
        raise BadInputError("--dry-run and --resume do not go together")
    stored = session.resumable_run(journal_dir) if args.resume else None
    shape = session.resume_shape(stored.request if stored else None, _given_shape(args))
    request = build_request(args, shape)
    cloud = open_cloud(args)  # every check before anything is written
    ovn = _gateway_cloud(args, cloud)
    snapshot = session.check_hosts(cloud, request.hosts, ovn)
    hooks = session.Hooks(_say, _output_line, _ask_continue)
    guard = session.traffic_guard(  # checked in a dry run too: it refuses what the run would
        snapshot,
        collect_targets(args) if getattr(args, "target_specs", None) or args.targets_file else [],
        _router_probe(args.probe_routers),
        request,
        (args.probe_interval, args.probe_timeout),
    )
    if args.dry_run:
        return _finish(args, session.execute(cloud, request, None, shape, hooks, ovn=ovn))
    if args.output is not None:
        prepare_output(args.output)
    report = session.execute(
        cloud, request, journal_dir, shape, hooks, guard=guard, resume=stored, output=args.output,
        ovn=ovn,
    )  # fmt: skip
    return _finish(args, report)


def _gateway_cloud(args: argparse.Namespace, cloud: Any) -> Any:
    """The ML2/OVN reader when the agents show an ML2/OVN cloud, else None; an L3-agent-only
    option there is one line, exit 2."""
    from l3ha.cloud.ovn import NeutronOvn
    from l3ha.ovn_model import Backend

    ovn = NeutronOvn(cloud)
    if ovn.backend() is not Backend.OVN:
        return None
    refused = {
        "--canary is for L3 agents: this is an ML2/OVN cloud (the undrain's first router "
        "is the canary)": args.canary,
        "--rebalance-after is for L3 agents: this is an ML2/OVN cloud (each chassis' "
        "restore rebalances)": args.rebalance_after,
    }
    for message, given in refused.items():
        if given:
            raise BadInputError(message)
    return ovn


def _router_probe(spec: str | None) -> Any:
    """``--probe-routers tcp:PORT|icmp`` as (target kind, port), or None."""
    from l3ha.daemon.dataplane import parse_probe_spec

    if not spec:
        return None
    parsed = parse_probe_spec(spec)
    return (parsed.kind, parsed.port)


def _finish(args: argparse.Namespace, report: RollingReport) -> int:
    from l3ha.operations.rolling.report import closing_lines, document, rows

    if args.format != "table":
        emit_document(document(report), args.format)
        return report.exit_code
    if report.dry_run:
        for number, (key, _) in enumerate(report.steps, start=1):
            sys.stdout.write(f"{number:3}. {key.host}: {key.label}\n")
    emit(rows(report, table=True), "table")
    for line in closing_lines(report):
        sys.stdout.write(f"{line}\n")
    return report.exit_code
