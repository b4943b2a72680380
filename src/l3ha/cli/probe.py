"""``l3ha probe``: measure outage windows of ICMP/TCP/HTTP/DNS targets; ``l3ha probe mark``.

I/O: argv, stdout/stderr, signals, files in ``--output``; the probe itself
lives in ``l3ha.probe``. Heavy imports (matplotlib, dnslib, the cloud adapter)
happen inside the handlers.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from l3ha.cli.argtypes import finite_float, non_negative_float, positive_float
from l3ha.cli.common import add_cloud_options, open_cloud, state_dir
from l3ha.cli.output import add_document_format_options, emit, emit_document, select_columns
from l3ha.errors import BadInputError, L3haError, NotFoundError

USAGE = """
  l3ha probe [--icmp ADDR]... [--tcp HOST:PORT]... [--http URL]... [--dns NAME[@SERVER]]...
             [--targets-file FILE] [--interval S] [--timeout S] [--duration S] [--output DIR]
             [--max-outage S] [--max-loss PCT] [--events] [--router ID]... [options]
  l3ha probe mark TEXT [--socket PATH | --output DIR]"""

DESCRIPTION = """\
Sample targets on a fixed grid (each sample independent: a slow one never
delays the next) and measure outage windows: from the start of the first
failed sample to the start of the first successful one after it. Runs until
Ctrl-C unless --duration is given; either way it prints a timeline and a
summary table and, with --output DIR, writes samples.jsonl, events.jsonl,
timeline.txt, summary.json, report.png and report.html. --max-outage and
--max-loss turn it into a gate (exit 1 when exceeded). A target may carry a
label: --http keystone=http://127.0.0.1:5000/v3. While it runs,
'l3ha probe mark TEXT' in another shell adds a marker to its timeline.

Targets are staggered across the interval, so --duration must be at least one
--interval: then every target is sampled at least once. A target that still
got no sample (stopped early) shows loss n/a, and fails any gate.

Ctrl-C (or SIGTERM) stops sampling and waits up to --timeout (+0.2 s) for the
samples in flight; a second Ctrl-C cancels them (they are dropped, counted
neither up nor down). Either way the report is written and the exit code is
the gate's.
"""

MIN_INTERVAL = 0.001


def _interval(text: str) -> float:
    value = positive_float(text)
    if value < MIN_INTERVAL:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_INTERVAL:g}: {text!r}")
    return value


def _percentage(text: str) -> float:
    value = finite_float(text)
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be a percentage from 0 to 100: {text!r}")
    return value


def _status_range(text: str) -> tuple[int, int]:
    low, _, high = text.partition("-")
    try:
        bounds = (int(low), int(high or low))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a status range like 200-399") from None
    if not 100 <= bounds[0] <= bounds[1] <= 599:
        raise argparse.ArgumentTypeError(f"{text!r} is not a status range within 100-599")
    return bounds


class _TargetAction(argparse.Action):
    """Collect ``--icmp/--tcp/--http/--dns`` into one list in command-line order."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        specs = list(getattr(namespace, "target_specs", None) or [])
        specs.append((self.dest, values))
        namespace.target_specs = specs


def register(subparsers: Any) -> None:
    """Add ``probe`` and ``probe mark``."""
    parser = subparsers.add_parser(
        "probe",
        help="measure outages of ICMP/TCP/HTTP/DNS targets (and mark a running probe)",
        description=DESCRIPTION,
        usage=USAGE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_target_options(parser)
    _add_run_options(parser)
    add_document_format_options(parser)
    add_cloud_options(parser, weights=False)
    parser.set_defaults(func=run_probe)
    sub = parser.add_subparsers(
        title="subcommands", metavar="SUBCOMMAND", parser_class=type(parser), prog=parser.prog
    )
    mark = sub.add_parser(
        "mark",
        help="add a marker to a running probe's timeline",
        description="Add a marker (e.g. 'upgrade starts') to the timeline of a running probe.",
    )
    mark.add_argument("text", metavar="TEXT", help="the marker text")
    where = mark.add_mutually_exclusive_group()
    where.add_argument("--socket", type=Path, metavar="PATH", help="the probe's marker socket")
    where.add_argument("--output", type=Path, metavar="DIR", help="the probe's --output DIR")
    mark.set_defaults(func=mark_probe)


def add_target_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("targets (each repeatable, [LABEL=]SPEC)")
    group.add_argument("--icmp", action=_TargetAction, metavar="ADDR", help="echo an IP")
    group.add_argument("--tcp", action=_TargetAction, metavar="HOST:PORT", help="connect over TCP")
    group.add_argument(
        "--http", action=_TargetAction, metavar="URL", help="GET a URL, check status"
    )
    group.add_argument(
        "--dns",
        action=_TargetAction,
        metavar="NAME[@SERVER[:PORT]]",
        help="ask for NAME's A record (server defaults to resolv.conf's first)",
    )
    group.add_argument(
        "--targets-file",
        type=Path,
        metavar="FILE",
        help="targets, one 'KIND SPEC [LABEL]' per line ('#' comments)",
    )


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("sampling and output")
    group.add_argument(
        "--interval",
        type=_interval,
        default=1.0,
        metavar="S",
        help="seconds between samples of one target (default 1, at least 0.001)",
    )
    group.add_argument(
        "--timeout",
        type=positive_float,
        default=1.0,
        metavar="S",
        help="a sample that takes longer fails (default 1)",
    )
    group.add_argument(
        "--duration",
        type=positive_float,
        metavar="S",
        help="stop after this long, at least one --interval so that every target is sampled "
        "(default: run until Ctrl-C)",
    )
    group.add_argument(
        "--http-ok",
        type=_status_range,
        default=(200, 399),
        metavar="LOW-HIGH",
        help="HTTP status codes that count as up (default 200-399)",
    )
    group.add_argument(
        "--icmp-mode",
        choices=("auto", "raw", "dgram"),
        default="auto",
        help="ICMP socket: raw (root), dgram (ping_group_range) or auto",
    )
    group.add_argument(
        "--output",
        type=Path,
        metavar="DIR",
        help="write samples, events, summary and report here (created if missing; checked "
        "to be a writable directory before sampling starts)",
    )
    group.add_argument(
        "--socket", type=Path, metavar="PATH", help="also listen for markers on this unix socket"
    )
    group.add_argument("--name", default="probe", metavar="LABEL", help="title of the report")
    gate = parser.add_argument_group("gate (exit 1 when exceeded)")
    gate.add_argument(
        "--max-outage",
        type=non_negative_float,
        metavar="S",
        help="longest allowed outage of any target, seconds (>= 0); a target without any "
        "sample fails the gate too",
    )
    gate.add_argument(
        "--max-loss",
        type=_percentage,
        metavar="PCT",
        help="highest allowed sample loss of any target, percent (0-100); a target without "
        "any sample fails the gate too",
    )
    events = parser.add_argument_group("control-plane events")
    events.add_argument(
        "--events",
        action="store_true",
        help="poll the cloud for agent alive/dead/admin changes, and l3ha's journal for moves "
        "started and finished",
    )
    events.add_argument(
        "--state-dir",
        metavar="DIR",
        help="journal directory to follow (default: $L3HA_STATE_DIR, else $XDG_STATE_HOME/l3ha)",
    )
    events.add_argument(
        "--router",
        action="append",
        default=[],
        metavar="ID",
        help="also follow this router's (id or name) bindings and HA states (implies --events)",
    )
    events.add_argument(
        "--events-interval",
        type=positive_float,
        default=2.0,
        metavar="S",
        help="seconds between cloud polls (default 2)",
    )


# --- handlers ------------------------------------------------------------------------


def collect_targets(args: argparse.Namespace) -> list[Any]:
    """Every target from the options and the targets file, validated."""
    from l3ha.probe.targets import check_unique, parse_target, parse_targets_text

    specs = getattr(args, "target_specs", None) or []
    wants_dns = any(kind == "dns" for kind, _ in specs) or args.targets_file
    default_dns = _default_nameserver() if wants_dns else None
    targets = [parse_target(kind, spec, default_dns) for kind, spec in specs]
    if args.targets_file is not None:
        try:
            text = args.targets_file.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise NotFoundError(f"targets file {args.targets_file} does not exist") from None
        except OSError as exc:
            raise BadInputError(f"cannot read targets file {args.targets_file}: {exc}") from None
        except UnicodeDecodeError as exc:
            raise BadInputError(
                f"targets file {args.targets_file} is not UTF-8 text "
                f"(byte {exc.object[exc.start]:#04x} at offset {exc.start})"
            ) from None
        targets += parse_targets_text(text, str(args.targets_file), default_dns)
    if not targets:
        raise BadInputError("no targets: give --icmp, --tcp, --http, --dns or --targets-file")
    check_unique(targets)
    return targets


def _default_nameserver() -> str | None:
    from l3ha.probe.targets import nameserver_from_resolv_conf

    try:
        return nameserver_from_resolv_conf(Path("/etc/resolv.conf").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None


def prepare_output(output: Path) -> None:
    """Create ``--output DIR`` if needed and prove a file can be written there (and removed).

    Any failure is one-line bad input before sampling starts; nothing is left behind.
    """
    if output.exists() and not output.is_dir():
        raise BadInputError(f"--output {output} exists and is not a directory")
    try:
        output.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=output, prefix=".l3ha-probe-"):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise BadInputError(f"--output {output} is not a writable directory: {reason}") from None


def run_probe(args: argparse.Namespace) -> int:
    """Run the probe, print timeline and summary, write the report; 1 when the gate fails."""
    from l3ha.probe.live import LiveView
    from l3ha.probe.marks import socket_in, well_known_socket
    from l3ha.probe.report import summary_document, summary_rows
    from l3ha.probe.runner import Probe, ProbeConfig
    from l3ha.probe.samplers import IcmpMode
    from l3ha.probe.timeline import timeline_lines

    targets = collect_targets(args)
    select_columns(args.column, _summary_columns())  # an unknown -c fails now, not at the end
    sockets = [p for p in (args.socket, args.output and socket_in(args.output)) if p]
    config = ProbeConfig(
        targets=tuple(targets),
        interval=args.interval,
        timeout=args.timeout,
        duration=args.duration,
        http_ok=args.http_ok,
        icmp_mode=IcmpMode(args.icmp_mode),
        name=args.name,
        mark_sockets=(*sockets, well_known_socket()),
    )
    if args.output:
        prepare_output(args.output)
    probe = Probe(config, _event_sources(args))
    log = _open_sample_log(args.output) if args.output else None
    if log is not None:
        probe.add_observer(log)
    if sys.stdout.isatty() and args.format == "table":
        probe.add_observer(LiveView(sys.stdout))
    with _stop_on_signals(probe):  # the report is written even after a second Ctrl-C
        try:
            result = probe.run()
        finally:
            if log is not None:
                log.close()
        summary = summary_document(result, args.max_outage, args.max_loss)
        if args.output:
            _write_report(result, summary, args.output)
    if args.format == "table":
        lines = timeline_lines(result.transitions, result.events, result.origin, result.until)
        sys.stdout.write("".join(line + "\n" for line in lines) + ("\n" if lines else ""))
        emit(summary_rows(summary), "table", args.column, _summary_columns())
    else:
        emit_document(summary, args.format)
    violations = summary["gate"]["violations"]
    for violation in violations:
        sys.stderr.write(f"l3ha: gate failed: {violation}\n")
    if summary["unsampled"] and not violations:
        names = ", ".join(summary["unsampled"])
        sys.stderr.write(f"l3ha: warning: no sample taken, not measured: {names}\n")
    return 0 if summary["gate"]["passed"] else 1


def _open_sample_log(output: Path) -> Any:
    from l3ha.probe.report import SampleLog

    try:
        return SampleLog(output)
    except OSError as exc:
        raise BadInputError(f"--output {output}: cannot write samples: {exc}") from None


def _write_report(result: Any, summary: dict[str, Any], output: Path) -> None:
    from l3ha.probe.report import write_report

    try:
        write_report(result, summary, output)
    except OSError as exc:
        raise L3haError(f"cannot write the report in {output}: {exc}") from None


def _summary_columns() -> list[str]:
    from l3ha.probe.report import SUMMARY_COLUMNS

    return list(SUMMARY_COLUMNS)


@contextlib.contextmanager
def _stop_on_signals(probe: Any) -> Iterator[None]:
    """The first SIGINT/SIGTERM stops sampling and waits for samples in flight; the second
    drops them. The report is written either way; a third Ctrl-C interrupts even that."""
    received = 0

    def handle(signum: int, frame: object) -> None:
        nonlocal received
        received += 1
        if received == 1:
            probe.stop()
            _say(_stopping_text(probe))
        elif received == 2:
            probe.abort()
            _say("l3ha: stopping now: samples in flight are dropped; writing the report")
            signal.signal(signal.SIGINT, signal.default_int_handler)

    saved = {signum: signal.signal(signum, handle) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


def _stopping_text(probe: Any) -> str:
    flying = probe.in_flight
    if not flying:
        return "l3ha: stopping"
    return (
        f"l3ha: stopping: waiting up to {probe.config.drain_limit:g} s for {flying} samples "
        "in flight; Ctrl-C again to stop now"
    )


def _say(line: str) -> None:
    """One line to stderr from a signal handler (os.write: no re-entrant buffered I/O)."""
    with contextlib.suppress(OSError, ValueError):
        os.write(sys.stderr.fileno(), (line + "\n").encode())


def _event_sources(args: argparse.Namespace) -> list[Any]:
    if not (args.events or args.router):
        return []
    from l3ha.clock import SystemClock
    from l3ha.model import Snapshot
    from l3ha.probe.events import CloudEventPoller

    cloud = open_cloud(args)
    known = Snapshot(agents=(), routers=tuple(cloud.list_routers()), bindings=())
    routers = [known.find_router(ref) for ref in args.router]
    labels = {r.id: r.name or r.id for r in routers}
    poller = CloudEventPoller(cloud, SystemClock(), list(labels), args.events_interval, labels)
    return [poller, _journal_poller(args, cloud)]


def _journal_poller(args: argparse.Namespace, cloud: Any) -> Any:
    from l3ha.clock import SystemClock
    from l3ha.probe.events import JournalEventPoller

    hosts = {a.id: a.host for a in cloud.list_agents()}
    return JournalEventPoller(state_dir(args), SystemClock(), host_of=lambda i: hosts.get(i, i))


def mark_probe(args: argparse.Namespace) -> int:
    """Send a marker to a running probe."""
    from l3ha.probe.marks import send_mark, socket_in, well_known_socket

    path = args.socket or (socket_in(args.output) if args.output else well_known_socket())
    at = send_mark(path, args.text)
    sys.stdout.write(f"marked at +{at:.3f}s: {args.text}\n")
    return 0
