"""``l3ha rolling``: drain, upgrade and restore network nodes one at a time.

I/O: argv, stdout/stderr, the cloud, the journals in the state dir and the
probe report directory. The operation itself is ``l3ha.operations.rolling``;
this module turns options into a ``RollingRequest``, sets up the probe and
the journals, and prints progress, the command output and the summary.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from l3ha.cli.actions import add_execution_options, executor_options
from l3ha.cli.argtypes import non_negative_float, positive_float
from l3ha.cli.common import add_cloud_options, load_weight_policy, open_cloud
from l3ha.cli.output import emit, emit_document
from l3ha.cli.planning import add_placement_options, placement_request
from l3ha.cli.probe import add_target_options, collect_targets, prepare_output
from l3ha.errors import BadInputError

if TYPE_CHECKING:
    from l3ha.operations.rolling import RollingRecord, RollingReport, RollingRequest, RunRecord

DESCRIPTION = """\
Take network nodes out of service one at a time, run the maintenance command
on each (an upgrade), and give each its routers back only once its agent has
proven healthy. Per host, in order:

  1. drain: disable its L3 agent after moving its legacy routers away and
     replacing its HA replicas (waiting until the moved routers' ports are ACTIVE);
  2. run --run (split with shell-like quoting, {host} substituted, no shell
     unless --shell; output streamed and kept in the journal); a non-zero exit
     stops the run;
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
    g.add_argument("--run", metavar="'CMD {host}'", help="the maintenance command of each host")
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


def _say(text: str) -> None:
    sys.stderr.write(f"l3ha: {text}\n")
    sys.stderr.flush()


def _output_line(text: str) -> None:
    """A line of a host's command output (stderr: stdout carries only the summary)."""
    sys.stderr.write(f"  {text}\n")
    sys.stderr.flush()


def build_request(args: argparse.Namespace, stored: dict[str, Any] | None) -> RollingRequest:
    """The request of the options; on ``--resume``, the stored run's hosts and command."""
    from l3ha.health import HealthPolicy
    from l3ha.operations.rolling import RollingRequest

    if args.no_wait:
        raise BadInputError("--no-wait: a rolling run always waits for the ports to be ACTIVE")
    hosts = tuple(h.strip() for h in (args.hosts or "").split(",") if h.strip())
    command, shell = args.run, args.shell
    if stored is not None:
        if hosts and list(hosts) != stored["hosts"]:
            raise BadInputError(
                f"--resume: the run to resume rolls {','.join(stored['hosts'])}, not "
                f"{','.join(hosts)}"
            )
        hosts = tuple(stored["hosts"])
        if command is None:
            command, shell = stored.get("command"), bool(stored.get("shell"))
    elif not hosts:
        raise BadInputError("name the hosts: --hosts HOST[,HOST...]")
    if args.report_interval >= args.dead_after:
        raise BadInputError("--report-interval must be shorter than --dead-after")
    return RollingRequest(
        hosts=hosts,
        command=command,
        shell=shell,
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


def _resumable(record: RollingRecord) -> RunRecord:
    from l3ha.operations.rolling import RunStatus

    latest = record.latest_run()
    if latest is None:
        raise BadInputError(f"--resume: no rolling run recorded in {record.state_dir}")
    if latest.status is RunStatus.DONE:
        raise BadInputError(f"--resume: the last rolling run ({latest.id}) finished; nothing to do")
    return latest


def run_rolling_command(args: argparse.Namespace) -> int:
    """Run (or resume) the rolling maintenance; print the summary; 0 done, 1 stopped."""
    from l3ha.journal import default_state_dir
    from l3ha.operations.rolling import RollingRecord
    from l3ha.operations.rolling.record import DB_NAME

    state_dir = Path(args.state_dir) if args.state_dir else default_state_dir()
    if args.dry_run:
        if args.resume:
            raise BadInputError("--dry-run and --resume do not go together")
        request = build_request(args, None)
        return _finish(args, _execute(args, request, _prepare(args, request), None, None))
    if args.resume and not (state_dir / DB_NAME).exists():
        raise BadInputError(f"--resume: no rolling run recorded in {state_dir}")
    stored = None
    if args.resume:
        with RollingRecord(state_dir) as record:
            stored = _resumable(record)
    request = build_request(args, stored.request if stored else None)
    prepared = _prepare(args, request)  # every check before anything is written
    if args.output is not None:
        prepare_output(args.output)
    with RollingRecord(state_dir) as record:
        live = record.live_run()
        if live is not None:
            raise BadInputError(f"rolling run {live.id} is still running (pid {live.pid})")
        return _finish(args, _execute(args, request, prepared, record, stored))


def _prepare(args: argparse.Namespace, request: RollingRequest) -> tuple[Any, Any]:
    """The cloud (every host checked to exist) and the probe guard (None: no targets)."""
    cloud = open_cloud(args)
    snapshot = cloud.read_snapshot()
    for host in request.hosts:
        snapshot.find_agent(host)  # an unknown host fails now, before anything changes
    return cloud, None if request.dry_run else _guard(args, snapshot)


def _execute(
    args: argparse.Namespace,
    request: RollingRequest,
    prepared: tuple[Any, Any],
    record: RollingRecord | None,
    stored: RunRecord | None,
) -> RollingReport:
    from contextlib import nullcontext

    from l3ha.clock import SystemClock
    from l3ha.cloud.dhcp import NeutronDhcp
    from l3ha.journal import Journal
    from l3ha.operations import OperationContext
    from l3ha.operations.rolling import DhcpParticipant, L3Participant, RunContext, run_rolling

    cloud, guard = prepared
    journal = Journal(record.state_dir) if record is not None else None
    with journal if journal is not None else nullcontext():
        ops = OperationContext(cloud, journal, SystemClock(), _say)
        ctx = RunContext(ops, request, guard)
        doc = {"hosts": list(request.hosts), "command": request.command, "shell": request.shell}
        if guard is not None:
            guard.start()
        try:
            report = run_rolling(
                ctx,
                record,
                [L3Participant(), DhcpParticipant(NeutronDhcp(cloud))],
                say=_say,
                on_output=_output_line,
                resume_run=stored.id if stored else None,
                request_doc=doc,
            )
        finally:
            if guard is not None:
                result = guard.stop()
                if guard.error is not None:
                    _say(f"warning: the probe failed: {guard.error}")
                if result is not None and record is not None:
                    _write_probe_report(args, record, result, request.max_outage)
    return report


def _guard(args: argparse.Namespace, snapshot: Any) -> Any:
    from l3ha.daemon.dataplane import ProbeKind, parse_probe_spec
    from l3ha.operations.rolling import TrafficGuard, probe_config, router_targets
    from l3ha.probe.targets import TargetKind, check_unique

    wanted = getattr(args, "target_specs", None) or args.targets_file
    targets = list(collect_targets(args)) if wanted else []
    routers = {}
    if args.probe_routers:
        spec = parse_probe_spec(args.probe_routers)
        kind = TargetKind.TCP if spec.kind is ProbeKind.TCP else TargetKind.ICMP
        routers = router_targets(snapshot, kind, spec.port)
    if not targets and not routers:
        if args.max_outage is not None:
            raise BadInputError("--max-outage needs probe targets (--tcp, ..., --probe-routers)")
        return None
    check_unique([*targets, *routers.values()])
    config = probe_config(targets, routers, args.probe_interval, args.probe_timeout, "rolling")
    return TrafficGuard(config, routers)


def _write_probe_report(
    args: argparse.Namespace, record: RollingRecord, result: Any, max_outage: float | None
) -> None:
    from l3ha.probe.report import summary_document, write_report

    latest = record.latest_run()
    output = args.output or record.state_dir / f"rolling-{latest.id if latest else 0}"
    summary = summary_document(result, max_outage, None)
    try:
        write_report(result, summary, output)
    except OSError as exc:
        _say(f"warning: cannot write the probe report in {output}: {exc}")
        return
    _say(f"probe report: {output}")


def _finish(args: argparse.Namespace, report: RollingReport) -> int:
    rows = [
        {
            "host": h.host,
            "status": h.status,
            "moved_out": h.moved_out,
            "moved_back": h.moved_back,
            "networks_out": h.networks_out,
            "networks_back": h.networks_back,
            "longest_outage_s": round(h.longest_outage_s, 2),
            "seconds": round(h.seconds, 1),
        }
        for h in report.hosts
    ]
    if args.format != "table":
        steps = [{"host": k.host, "step": k.label, "status": s} for k, s in report.steps]
        doc = {"run": report.run_id, "hosts": rows, "steps": steps, "stopped": report.stopped,
               "rebalance_moves": report.rebalance_moves,
               "longest_outage_s": round(report.longest_outage_s, 3),
               "longest_outage_target": report.longest_outage_target}  # fmt: skip
        emit_document(doc, args.format)
        return report.exit_code
    if not any(k.participant == "dhcp" for k, _ in report.steps):  # no DHCP agent rolled
        for row in rows:
            del row["networks_out"], row["networks_back"]
    if report.run_id is None:  # dry run
        for number, (key, _) in enumerate(report.steps, start=1):
            sys.stdout.write(f"{number:3}. {key.host}: {key.label}\n")
        rows = [
            {"host": h.host, "status": h.status, "would_move": h.moved_out}
            | ({"would_move_networks": h.networks_out} if "networks_out" in rows[0] else {})
            for h in report.hosts
        ]
    emit(rows, "table")
    if report.rebalance_moves:
        sys.stdout.write(f"rebalance: {report.rebalance_moves} move(s)\n")
    if report.longest_outage_target:
        sys.stdout.write(
            f"longest outage: {report.longest_outage_s:.2f} s ({report.longest_outage_target})\n"
        )
    if report.stopped:
        sys.stdout.write(f"stopped: {report.stopped}\n(fix it, then: l3ha rolling --resume)\n")
    return report.exit_code
