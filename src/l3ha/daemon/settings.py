"""Configuration of ``l3ha watch`` through oslo.config. I/O: reads configuration files.

Every option is defined once (``_SPECS``) and appears three ways: in the INI
file (``/etc/l3ha/l3ha.conf``, ``--config-file``), as a command-line flag of the
same name (``dead_after`` is ``--dead-after``), and in the generated sample
(``sample_config()``, ``l3ha config sample``, ``etc/l3ha.conf.sample``; the
``oslo.config.opts`` entry point ``l3ha`` gives the same options to
``oslo-config-generator``).

Precedence, highest first: a flag given on the command line, the
``--config-file`` files (later files win), ``/etc/l3ha/l3ha.conf`` if it exists,
the built-in default. Unknown option names in l3ha's sections, malformed files
and bad values are ``BadInputError`` with one line naming the file or flag.
"""

from __future__ import annotations

import argparse
import difflib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from oslo_config import cfg

from l3ha.errors import BadInputError
from l3ha.journal import default_state_dir
from l3ha.measurement import DEFAULT_WEIGHTS_INTERVAL

DEFAULT_CONFIG_FILE = "/etc/l3ha/l3ha.conf"
WATCH = "watch"
DEFAULT = "DEFAULT"

# A table, one option per entry (its help text under its name): kept out of the formatter.
# fmt: off
_SPECS: tuple[tuple[str, cfg.Opt, str], ...] = (
    # (group, option, metavar)
    (DEFAULT, cfg.StrOpt("os_cloud", default="",
        help="The clouds.yaml entry naming the Neutron API and its credentials. Empty: $OS_CLOUD, "
        "else the OS_* environment variables."), "NAME"),
    (DEFAULT, cfg.FloatOpt("api_rate", default=50.0, min=0.1,
        help="At most this many Neutron API calls per second, reads and writes of every thread "
        "together. Lower than a one-shot command's 100: the daemon acts unattended, for as long "
        "as it runs, on a Neutron that an incident may be straining already."), "CALLS_PER_S"),
    (DEFAULT, cfg.StrOpt("state_dir", default="",
        help="Directory of l3ha's journal (interrupted operations are finished from it) and, by "
        "default, of the leader lock file. Empty: $L3HA_STATE_DIR, else $XDG_STATE_HOME/l3ha, "
        "else ~/.local/state/l3ha."), "DIR"),
    (DEFAULT, cfg.StrOpt("log_format", default="text",
        choices=[("text", "readable lines"), ("json", "one JSON object per line")],
        help="Log lines as readable text, or one JSON object per event (for log shippers)."),
        "FORMAT"),
    (WATCH, cfg.FloatOpt("interval", default=10.0, min=0.1,
        help="Seconds between the starts of two watch cycles (observe, judge, plan, act, verify). "
        "A snapshot that takes longer than this is stale and halts moves."), "SECONDS"),
    (WATCH, cfg.BoolOpt("once", default=False,
        help="Run one cycle, then exit (for cron-style use and for testing a configuration)."), ""),
    (WATCH, cfg.BoolOpt("dry_run", default=False,
        help="Observe, judge and plan as usual but change nothing in the cloud; every move that "
        "would be made is logged with its reason."), ""),
    (WATCH, cfg.FloatOpt("dead_after", default=75.0, min=1.0,
        help="An agent whose heartbeat value has not changed for this many seconds, timed on "
        "l3ha's own clock, is stale. Keep it at least Neutron's agent_down_time (75 s by "
        "default); after a broad outage ends, l3ha also waits this long before acting."),
        "SECONDS"),
    (WATCH, cfg.FloatOpt("report_interval", default=30.0, min=0.1,
        help="How often the L3 agents report their heartbeat: Neutron's report_interval (30 s by "
        "default). An agent silent for dead_after minus this has missed a heartbeat; many "
        "agents missing one at once halts every move (a control-plane fault) before any of "
        "them can be judged dead. Must be shorter than dead_after."), "SECONDS"),
    (WATCH, cfg.IntOpt("dead_observations", default=3, min=1,
        help="Consecutive cycles an agent must be seen stale before it is judged dead and its "
        "routers are moved. One stale reading never moves anything."), "N"),
    (WATCH, cfg.FloatOpt("max_dead_fraction", default=0.55, min=0.0, max=1.0,
        help="When more than this fraction of the agents (of all, or of one availability zone) is "
        "stale and more than two are, the fault is taken to be in the control plane (message "
        "bus, Neutron server): every automatic move halts until it clears."), "FRACTION"),
    (WATCH, cfg.StrOpt("dataplane_probe", default="",
        help="Second channel before judging an agent dead: 'tcp:PORT' connects to, 'icmp' pings, "
        "the external gateway addresses of some of its routers. Any answer means the agent "
        "still forwards (partitioned, not dead) and nothing moves. Empty: off. 'icmp' needs "
        "raw sockets (root or CAP_NET_RAW)."), "tcp:PORT|icmp"),
    (WATCH, cfg.BoolOpt("dataplane_confirms", default=False,
        help="With dataplane_probe: an agent that has missed a heartbeat (silent for dead_after "
        "minus report_interval) on dead_observations consecutive cycles, and none of whose "
        "probed gateways answers, is dead at once, before its silence reaches dead_after. "
        "Every gate still applies first; an agent with no legacy router to probe waits for "
        "dead_after."), ""),
    (WATCH, cfg.IntOpt("probe_routers", default=3, min=1,
        help="How many of a stale agent's routers the data-plane probe tries."), "N"),
    (WATCH, cfg.BoolOpt("auto_rebalance", default=False,
        help="Also move routers from the most to the least loaded agents when the load is uneven. "
        "Off: only dead agents are evacuated, unhosted routers bound and HA replicas on dead "
        "agents replaced."), ""),
    (WATCH, cfg.BoolOpt("dhcp", default=False,
        help="Also keep every DHCP network on live DHCP agents: a DHCP agent l3ha judges dead "
        "(same heartbeat judgement, gates and move budget as L3 agents) has its networks moved "
        "make before break, and networks served by no live agent get a copy. Neutron's "
        "allow_automatic_dhcp_failover may stay on; l3ha also halts when it suspects the "
        "message bus, which Neutron does not."), ""),
    (WATCH, cfg.IntOpt("dhcp_agents_per_network", default=1, min=1,
        help="With dhcp: live DHCP agents every network should have. Set it to Neutron's "
        "dhcp_agents_per_network (1 by default); extra copies are never removed by the "
        "daemon."), "N"),
    (WATCH, cfg.FloatOpt("max_moves_per_minute", default=600.0, min=0.1,
        help="Token-bucket rate of router moves while at most one agent is disrupted. The "
        "bucket holds max_moves_per_cycle moves, so one dead agent's routers move at once and "
        "the rate only bounds what follows."), "RATE"),
    (WATCH, cfg.FloatOpt("disrupted_moves_per_minute", default=60.0, min=0.1,
        help="The lower move rate used while more than one agent is disrupted (dead, suspect or "
        "partitioned), when the cause may be wider than one node. Must not exceed "
        "max_moves_per_minute."), "RATE"),
    (WATCH, cfg.IntOpt("max_moves_per_cycle", default=400, min=1,
        help="At most this many moves are started in one cycle; the rest wait for the next cycle, "
        "which observes the cloud again first."), "N"),
    (WATCH, cfg.IntOpt("full_resync", default=30, min=1,
        help="Read every router binding again every this many cycles. In between, only the agents "
        "whose verdict changed or that an operation touched are re-read, so a quiet cycle "
        "costs a handful of API calls."), "CYCLES"),
    (WATCH, cfg.StrOpt("coordination", default="",
        help="Leader election URL (tooz): several l3ha instances run, exactly one acts. Empty: a "
        "lock file under state_dir (instances on one host only). Several hosts: "
        "etcd3+http://HOST:2379?lock_timeout=10 (a follower takes over about lock_timeout "
        "seconds after the leader dies; the leader stops acting when it could not refresh its "
        "lock for half of lock_timeout). redis://HOST:6379 also works."), "URL"),
    (WATCH, cfg.FloatOpt("shutdown_timeout", default=60.0, min=0.0,
        help="On SIGTERM, wait at most this many seconds for the moves in flight to finish before "
        "releasing leadership and exiting. Anything cut short is finished by the next leader "
        "from the journal and the cloud's actual state."), "SECONDS"),
    (WATCH, cfg.IntOpt("concurrency", default=8, min=1,
        help="Moves written to the Neutron API at the same time."), "N"),
    (WATCH, cfg.FloatOpt("port_timeout", default=300.0, min=1.0,
        help="After a move, wait this many seconds for the router's ports to become ACTIVE on the "
        "new agent. A move that takes longer is reported as slow, not as failed: the router "
        "has moved."), "SECONDS"),
    (WATCH, cfg.FloatOpt("weights_interval", default=DEFAULT_WEIGHTS_INTERVAL, min=1.0,
        help="Seconds between two readings of the measured router weights (--busy-ports, "
        "--busy-fips, --weights-prometheus); in between, every cycle uses the last reading. "
        "A source that cannot be read is a warning: the other weights still apply and no move "
        "waits for it."), "SECONDS"),
    (WATCH, cfg.PortOpt("metrics_port", default=9464,
        help="TCP port of the Prometheus metrics endpoint (http://HOST:PORT/metrics). 0 turns the "
        "endpoint off. Give each instance on one host its own port."), "PORT"),
    (WATCH, cfg.StrOpt("metrics_host", default="127.0.0.1",
        help="Address the metrics endpoint listens on. The default serves this host only; use an "
        "address Prometheus can reach (metrics carry host names, no credentials)."), "ADDRESS"),
)
# fmt: on


@dataclass(frozen=True)
class WatchSettings:
    """Everything ``l3ha watch`` is configured with, after flags, files and defaults."""

    os_cloud: str | None
    api_rate: float
    state_dir: Path
    log_format: str
    interval: float
    once: bool
    dry_run: bool
    dead_after: float
    report_interval: float
    dead_observations: int
    max_dead_fraction: float
    dataplane_probe: str
    probe_routers: int
    dataplane_confirms: bool
    auto_rebalance: bool
    max_moves_per_minute: float
    disrupted_moves_per_minute: float
    max_moves_per_cycle: int
    full_resync: int
    coordination: str
    shutdown_timeout: float
    concurrency: int
    port_timeout: float
    weights_interval: float
    metrics_port: int
    metrics_host: str
    config_files: tuple[str, ...] = ()
    dhcp: bool = False
    dhcp_agents_per_network: int = 1


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """The options by group, for ``oslo-config-generator --namespace l3ha``."""
    groups: dict[str, list[cfg.Opt]] = {}
    for group, opt, _ in _SPECS:
        groups.setdefault(group, []).append(opt)
    return [(name, list(opts)) for name, opts in groups.items()]


def flag_name(opt: cfg.Opt) -> str:
    """The command-line flag of an option: ``dead_after`` -> ``--dead-after``."""
    return "--" + opt.name.replace("_", "-")


def add_watch_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--config-file`` and one flag per option; unset flags leave the files in charge.

    A flag the parser already has (``--os-cloud`` from the shared cloud options,
    say) is left as it is: ``load_settings`` reads it by its dest, and treats
    ``None`` as "not given".
    """
    parser.add_argument(
        "--config-file",
        action="append",
        dest="config_file",
        metavar="FILE",
        help=f"read options from FILE (repeatable; later files win; also read: "
        f"{DEFAULT_CONFIG_FILE} if it exists, overridden by these)",
    )
    group = parser.add_argument_group("watch options (also settable in the config file)")
    for _section, opt, metavar in _SPECS:
        help_text = f"{opt.help} (default: {_flag_default(opt)})".replace("%", "%%")
        shape: dict[str, Any] = {"metavar": metavar}
        if isinstance(opt, cfg.BoolOpt):
            shape = {"action": argparse.BooleanOptionalAction}
        try:
            name, dest = flag_name(opt), opt.dest
            group.add_argument(name, dest=dest, default=argparse.SUPPRESS, help=help_text, **shape)
        except argparse.ArgumentError:
            continue  # the caller defined this flag already


def _flag_default(opt: cfg.Opt) -> str:
    if opt.default in ("", None):
        return "see above"
    if isinstance(opt.default, bool):
        return "on" if opt.default else "off"
    return f"{opt.default:g}" if isinstance(opt.default, float) else str(opt.default)


def load_settings(
    args: argparse.Namespace | None,
    config_files: Sequence[str] | None = None,
    *,
    default_files: Sequence[str] = (DEFAULT_CONFIG_FILE,),
    environ: Mapping[str, str] | None = None,
) -> WatchSettings:
    """Settings from flags (``args``), ``config_files`` (else ``args.config_file``) and defaults.

    Called again on SIGHUP: it keeps no state between calls.
    """
    if config_files is None:
        config_files = list(getattr(args, "config_file", None) or [])
    files = [path for path in default_files if os.path.isfile(path)]
    for path in config_files:
        if not os.path.isfile(path):
            raise BadInputError(f"config file {path}: not found")
        files.append(path)
    for path in files:
        _check_file(path)
    conf = _conf(files)
    _apply_flags(conf, args)
    values: dict[str, Any] = {}
    for group, opt, _ in _SPECS:
        section = conf if group == DEFAULT else conf[group]
        try:
            values[opt.dest] = section[opt.dest]
        except (cfg.Error, ValueError) as exc:  # a file value that the check let through
            raise BadInputError(f"option [{group}] {opt.dest}: {_one_line(exc)}") from exc
    return _settings(values, tuple(files), environ)


def _conf(files: Sequence[str]) -> cfg.ConfigOpts:
    conf = cfg.ConfigOpts()
    for group, opts in list_opts():
        conf.register_opts(opts, group=None if group == DEFAULT else group)
    try:
        conf(
            args=[],
            project="l3ha",
            default_config_files=list(files),
            default_config_dirs=[],
            use_env=False,
            validate_default_values=True,
        )
    except cfg.Error as exc:
        raise BadInputError(f"configuration: {_one_line(exc)}") from exc
    return conf


def _check_file(path: str) -> None:
    """Parse one file; every l3ha option in it must be known and valid."""
    sections: dict[str, dict[str, list[str]]] = {}
    try:
        cfg.ConfigParser(path, sections).parse()
    except cfg.ParseError as exc:
        raise BadInputError(f"config file {path}: {_one_line(exc)}") from exc
    except OSError as exc:
        raise BadInputError(f"config file {path}: {exc.strerror or exc}") from exc
    for group, opts in list_opts():
        known = {opt.dest: opt for opt in opts}
        for key, raw_values in sections.get(group, {}).items():
            if key not in known:
                hint = difflib.get_close_matches(key.replace("-", "_"), known, n=1)
                suggestion = f" (did you mean {hint[0]}?)" if hint else ""
                raise BadInputError(
                    f"config file {path}: [{group}] {key}: unknown option{suggestion}"
                )
            try:
                known[key].type(raw_values[-1])
            except ValueError as exc:
                raise BadInputError(
                    f"config file {path}: [{group}] {key} = {raw_values[-1]!r}: {_one_line(exc)}"
                ) from exc


def _apply_flags(conf: cfg.ConfigOpts, args: argparse.Namespace | None) -> None:
    for group, opt, _ in _SPECS:
        given = getattr(args, opt.dest, None) if args is not None else None
        if given is None:
            continue
        try:
            value = given if isinstance(given, bool) else opt.type(str(given))
        except ValueError as exc:
            raise BadInputError(f"{flag_name(opt)} {given!r}: {_one_line(exc)}") from exc
        conf.set_override(opt.dest, value, group=None if group == DEFAULT else group)


def _settings(
    values: dict[str, Any], files: tuple[str, ...], environ: Mapping[str, str] | None
) -> WatchSettings:
    from l3ha.daemon.leader import default_url

    state_dir = Path(values["state_dir"]) if values["state_dir"] else default_state_dir(environ)
    values["state_dir"] = state_dir
    values["os_cloud"] = values["os_cloud"] or None
    values["dataplane_probe"] = _probe(values["dataplane_probe"])
    values["coordination"] = _coordination(values["coordination"]) or default_url(state_dir)
    if values["report_interval"] >= values["dead_after"]:
        raise BadInputError(
            f"report_interval ({values['report_interval']:g} s) must be shorter than "
            f"dead_after ({values['dead_after']:g} s)"
        )
    if values["dataplane_confirms"] and not values["dataplane_probe"]:
        raise BadInputError("dataplane_confirms needs dataplane_probe (tcp:PORT or icmp)")
    if values["disrupted_moves_per_minute"] > values["max_moves_per_minute"]:
        raise BadInputError(
            f"disrupted_moves_per_minute ({values['disrupted_moves_per_minute']:g}) must not "
            f"exceed max_moves_per_minute ({values['max_moves_per_minute']:g})"
        )
    names = {f.name for f in fields(WatchSettings)}
    return WatchSettings(config_files=files, **{k: v for k, v in values.items() if k in names})


def _probe(text: str) -> str:
    text = text.strip()
    if not text:
        return ""
    from l3ha.daemon.dataplane import parse_probe_spec

    try:
        return str(parse_probe_spec(text))
    except BadInputError:
        raise BadInputError(
            f"dataplane_probe {text!r}: expected 'tcp:PORT' (PORT 1-65535), 'icmp' or empty"
        ) from None


def _coordination(url: str) -> str:
    url = url.strip()
    if url and "://" not in url:
        raise BadInputError(
            f"coordination {url!r}: expected a URL such as file:///var/lib/l3ha/coordination "
            "or etcd3+http://127.0.0.1:2379?lock_timeout=10"
        )
    return url


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


_SAMPLE_HEADER = """\
# l3ha configuration: the options of 'l3ha watch'.
#
# Generated from the option definitions by 'l3ha config sample'; regenerate it
# rather than editing it. Read from /etc/l3ha/l3ha.conf (if it exists), then from
# each --config-file (later files win); a command-line flag of the same name
# (dead_after is --dead-after) wins over both. Every line below is commented out
# and shows the built-in default.
"""

_TYPE_NAMES = {
    cfg.StrOpt: "string value",
    cfg.BoolOpt: "boolean value",
    cfg.IntOpt: "integer value",
    cfg.FloatOpt: "floating point value",
    cfg.PortOpt: "port value",
}


def sample_config(width: int = 79) -> str:
    """The documented sample file (``etc/l3ha.conf.sample``), rendered from the options."""
    import textwrap

    out = [_SAMPLE_HEADER]
    for group, opts in list_opts():
        out.append(f"\n[{group}]\n")
        for opt in opts:
            kind = _TYPE_NAMES.get(type(opt), "value")
            help_lines = textwrap.wrap(f"{opt.help} ({kind})", width - 2)
            out.append("\n" + "".join(f"# {line}\n" for line in help_lines))
            out.extend(f"# {line}\n" for line in _constraints(opt))
            out.append(f"#{opt.dest} = {_sample_default(opt)}\n".replace(" \n", "\n"))
    return "".join(out)


def _constraints(opt: cfg.Opt) -> list[str]:
    lines = []
    choices = getattr(opt.type, "choices", None)
    if choices:
        lines.append("Allowed values: " + ", ".join(str(c) for c in choices))
    low, high = getattr(opt.type, "min", None), getattr(opt.type, "max", None)
    if low is not None:
        lines.append(f"Minimum value: {low:g}")
    if high is not None:
        lines.append(f"Maximum value: {high:g}")
    return lines


def _sample_default(opt: cfg.Opt) -> str:
    if isinstance(opt.default, bool):
        return "true" if opt.default else "false"
    return "" if opt.default is None else str(opt.default)
