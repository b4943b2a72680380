"""Options and helpers of cloud-facing commands. I/O: reads the files options name, opens clouds.

- ``add_cloud_options``: the ``openstack`` client's own options (``--os-cloud``,
  ``--os-auth-url``, ``--os-region-name``, ``--insecure``, ``--os-cacert``, ``--timeout`` ...,
  registered by openstacksdk: ``l3ha.cloud.options``), ``--api-timeout``, ``--api-rate`` and
  the weight options ``--weights``, ``--busy-weight``,
  ``--busy-threshold`` (and the measured ones of ``l3ha.cli.weighing``). On a
  ``LazyOptionsParser`` the ``openstack`` options are added only when that command runs or
  shows its help (building them imports openstacksdk: ~0.4 s that ``l3ha --help`` and the
  commands that never reach a cloud do without).
- ``add_snapshot_option``: ``--snapshot FILE`` to work offline from a saved snapshot;
  ``add_replicas_option``: ``--replicas N`` of the HA audits.
- ``load_weight_policy``, ``open_cloud``, ``read_world``, ``read_weighed_world``: turn those
  options into a ``WeightPolicy``, a ``Cloud``, a ``Snapshot`` (with its measured weights).
- ``command_group``: ``l3ha agent ...``/``l3ha router ...`` groups that several
  command modules can add subcommands to; ``add_show_command``: their ``show``.
- ``add_state_dir_option``, ``state_dir``: the journal's ``--state-dir`` and where it is;
  ``read_text_file``: the text of a file an option names (weights, router lists).

openstacksdk is imported only when a cloud is actually opened.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from l3ha.cli.argtypes import positive_float, positive_int
from l3ha.cli.output import Row, add_format_options, emit_record
from l3ha.cli.weighing import (
    add_measured_weight_options,
    check_offline,
    combine_mode,
    measure_options,
    weigh,
)
from l3ha.errors import BadInputError
from l3ha.model import Snapshot
from l3ha.weights import DEFAULT_BUSY_WEIGHT, WeightPolicy

if TYPE_CHECKING:
    from l3ha.cloud.adapter import NeutronCloud

DEFAULT_API_TIMEOUT = 60.0
#: API calls per second a one-shot command makes at most (an operator is waiting, and
#: 100 calls/s is a small share of what one Neutron API worker serves).
DEFAULT_API_RATE = 100.0
_GROUP_ATTR = "_l3ha_subcommands"


def command_group(
    subparsers: Any, name: str, help_text: str
) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """The subcommand set of ``l3ha NAME``, created on first use and shared afterwards."""
    existing = subparsers.choices.get(name)
    if existing is not None:
        group: argparse._SubParsersAction[argparse.ArgumentParser] = getattr(existing, _GROUP_ATTR)
        return group
    parser = subparsers.add_parser(name, help=help_text, description=help_text)
    group = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=type(parser))
    setattr(parser, _GROUP_ATTR, group)
    parser.set_defaults(func=lambda _args: _group_usage(parser))
    return group


def _group_usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def add_show_command(
    group: argparse._SubParsersAction[argparse.ArgumentParser],
    noun: str,
    texts: tuple[str, str, str],
    record: Callable[[Snapshot, WeightPolicy, str], Row],
    with_ha_state: bool = False,
) -> None:
    """``l3ha NOUN show NOUN``: the ``record`` of one object of the cloud or ``--snapshot``;
    ``texts``: the command's help, its description and the help of its argument."""
    help_text, description, target_help = texts

    def show(args: argparse.Namespace) -> int:
        snapshot, policy = read_weighed_world(args, with_ha_state=with_ha_state)
        warn_about_weights(policy, snapshot)
        shown = record(snapshot, policy, getattr(args, noun))
        emit_record(shown, args.format, args.column, options=args)
        return 0

    parser = group.add_parser("show", help=help_text, description=description)
    parser.add_argument(noun, metavar=noun.upper(), help=target_help)
    add_cloud_options(parser)
    add_snapshot_option(parser)
    add_format_options(parser, show=True)
    parser.set_defaults(func=show)


class LazyOptionsParser(argparse.ArgumentParser):
    """An ArgumentParser that adds the options queued by ``when_invoked`` just before it
    first parses or formats its help or usage, so only the command being run builds them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pending: list[Callable[[argparse.ArgumentParser], None]] = []

    def when_invoked(self, hook: Callable[[argparse.ArgumentParser], None]) -> None:
        """Run ``hook(self)`` before this parser's first parse or help."""
        self._pending.append(hook)

    def complete(self) -> argparse.ArgumentParser:
        """Add every queued option now; return the parser."""
        pending, self._pending = self._pending, []
        for hook in pending:
            hook(self)
        return self

    def parse_known_args(  # type: ignore[override]
        self, args: Any = None, namespace: Any = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """As argparse's, once the queued options are in."""
        self.complete()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        """As argparse's, once the queued options are in."""
        self.complete()
        return super().format_help()

    def format_usage(self) -> str:
        """As argparse's, once the queued options are in."""
        self.complete()
        return super().format_usage()


def completed(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``parser`` with every option it has when its command runs (``LazyOptionsParser``)."""
    return parser.complete() if isinstance(parser, LazyOptionsParser) else parser


def add_cloud_options(
    parser: argparse.ArgumentParser,
    weights: bool = True,
    api_rate_default: float | None = DEFAULT_API_RATE,
) -> None:
    """Options naming the cloud (and, with ``weights``, how busy routers are weighed).

    ``api_rate_default``: ``--api-rate`` when not given (``None``: the caller
    decides later, as ``l3ha watch`` does from its configuration).
    """
    cloud = parser.add_argument_group("cloud")
    if isinstance(parser, LazyOptionsParser):
        parser.when_invoked(lambda invoked: _add_openstack_options(invoked, cloud))
    else:
        _add_openstack_options(parser, cloud)
    cloud.add_argument(
        "--api-timeout",
        type=positive_float,
        default=DEFAULT_API_TIMEOUT,
        metavar="SECONDS",
        help=f"give up on one API request after this long (default: {DEFAULT_API_TIMEOUT:g}; "
        "--timeout, when given, wins)",
    )
    cloud.add_argument(
        "--api-rate",
        type=positive_float,
        default=api_rate_default,
        metavar="CALLS_PER_S",
        help="make at most this many Neutron API calls per second, all threads together "
        + (f"(default: {api_rate_default:g})" if api_rate_default else "(default: api_rate)"),
    )
    if weights:
        add_weight_options(parser)


def _add_openstack_options(parser: argparse.ArgumentParser, group: argparse._ArgumentGroup) -> None:
    """The ``openstack`` client's options into ``group``, less those the command has itself."""
    from l3ha.cloud.options import cloud_option_actions

    taken = parser._option_string_actions
    for action in cloud_option_actions():
        if not any(flag in taken for flag in action.option_strings):
            group._add_action(action)


def add_weight_options(parser: argparse.ArgumentParser) -> None:
    """``--weights FILE``, ``--busy-weight N``, ``--busy-threshold N``."""
    group = parser.add_argument_group("router weights")
    group.add_argument(
        "--weights",
        metavar="FILE",
        help="JSON or YAML mapping router id -> weight; overrides the routers' tags",
    )
    group.add_argument(
        "--busy-weight",
        type=positive_int,
        default=DEFAULT_BUSY_WEIGHT,
        metavar="N",
        help=f"weight of a router tagged l3ha:busy (default: {DEFAULT_BUSY_WEIGHT})",
    )
    group.add_argument(
        "--busy-threshold",
        type=positive_int,
        default=None,
        metavar="N",
        help="a router of at least this weight counts as busy (default: the busy weight)",
    )
    add_measured_weight_options(group)


def add_snapshot_option(parser: argparse.ArgumentParser) -> None:
    """``--snapshot FILE``: read the world from a saved snapshot instead of the cloud."""
    parser.add_argument(
        "--snapshot",
        metavar="FILE",
        help="work offline from a file written by 'l3ha snapshot save' instead of the cloud",
    )


def add_replicas_option(parser: argparse.ArgumentParser) -> None:
    """``--replicas N``: how many live replicas an HA router should have."""
    parser.add_argument(
        "--replicas",
        type=positive_int,
        default=2,
        metavar="N",
        help="live replicas every HA router should have (default: 2)",
    )


def parse_weights(text: str, source: str) -> dict[str, int]:
    """A weights document (JSON or YAML mapping router id -> positive integer)."""
    try:
        doc: object = json.loads(text)
    except ValueError:
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise BadInputError(
                f"weights file {source}: neither JSON nor YAML ({_yaml_problem(exc)})"
            ) from exc
    if doc is None:
        return {}
    if not isinstance(doc, Mapping):
        raise BadInputError(f"weights file {source}: expected a mapping router id -> weight")
    weights: dict[str, int] = {}
    for key, value in doc.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise BadInputError(
                f"weights file {source}: weight of {key!r} must be a positive integer, "
                f"not {value!r}"
            )
        weights[str(key)] = value
    return weights


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """A one-line description of a YAML syntax error."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or "syntax error"
    where = f"line {mark.line + 1}: " if mark is not None else ""
    return " ".join(f"{where}{problem}".split())


def read_text_file(path: str, what: str) -> str:
    """The text of a file an option names; one line of bad input when it cannot be read."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise BadInputError(f"cannot read {what} {path}: {reason}") from exc


def load_weight_policy(args: argparse.Namespace) -> WeightPolicy:
    """The ``WeightPolicy`` the weight options describe (a bad file is a ``BadInputError``)."""
    busy_weight = int(getattr(args, "busy_weight", None) or DEFAULT_BUSY_WEIGHT)
    threshold = getattr(args, "busy_threshold", None) or busy_weight
    overrides: dict[str, int] = {}
    path = getattr(args, "weights", None)
    if path:
        overrides = parse_weights(read_text_file(path, "weights file"), path)
    return WeightPolicy(
        busy_weight=busy_weight,
        busy_threshold=int(threshold),
        overrides=overrides,
        combine=combine_mode(args),
    )


def open_cloud(args: argparse.Namespace) -> NeutronCloud:
    """Connect to the cloud the options name; errors are one-line ``l3ha.errors``."""
    import os

    from l3ha.cloud.adapter import connect
    from l3ha.cloud.options import TIMEOUT_DEST, sdk_arguments

    timeout = getattr(args, TIMEOUT_DEST, None) or getattr(args, "api_timeout", DEFAULT_API_TIMEOUT)
    return connect(
        cloud=getattr(args, "os_cloud", None),
        insecure=bool(getattr(args, "insecure", False)),
        cacert=getattr(args, "os_cacert", None) or os.environ.get("OS_CACERT") or None,
        timeout=timeout,
        api_rate=getattr(args, "api_rate", DEFAULT_API_RATE),
        sdk_arguments=sdk_arguments(args),
        connection=_given_connection(args),
    )


#: Where ``openstack l3ha ...`` (``l3ha.cli.osc``) puts a function returning its SDK connection.
CONNECTION_ATTR = "l3ha_sdk_connection"


def _given_connection(args: argparse.Namespace) -> Any:
    """The ``openstack`` client's SDK connection when running as its plugin, else ``None``."""
    factory = getattr(args, CONNECTION_ATTR, None)
    return factory() if factory is not None else None


def existing_directory(text: str) -> str:
    """The path of a directory that exists (a reader's --state-dir: a typo is no empty one)."""
    if not Path(text).is_dir():
        what = "is not a directory" if Path(text).exists() else "does not exist"
        raise argparse.ArgumentTypeError(f"{text} {what}")
    return text


def add_state_dir_option(parser: argparse.ArgumentParser, existing: bool = False) -> None:
    """``--state-dir``: where the journal lives (``existing``: a reader's, which must exist)."""
    parser.add_argument(
        "--state-dir",
        type=existing_directory if existing else str,
        metavar="DIR",
        help="journal directory (default: $L3HA_STATE_DIR, else $XDG_STATE_HOME/l3ha)",
    )


def state_dir(args: argparse.Namespace) -> Path:
    """``--state-dir``, else the default state directory (``$L3HA_STATE_DIR`` ...)."""
    from l3ha.journal import default_state_dir

    given = getattr(args, "state_dir", None)
    return Path(given) if given else default_state_dir()


def read_world(args: argparse.Namespace, with_ha_state: bool = False) -> Snapshot:
    """The snapshot named by ``--snapshot``, or a fresh read of the cloud."""
    path = getattr(args, "snapshot", None)
    if path:
        from l3ha.snapshotfile import load_snapshot

        return load_snapshot(path)
    return open_cloud(args).read_snapshot(with_ha_state=with_ha_state)


def warn_about_weights(policy: WeightPolicy, snapshot: Snapshot) -> None:
    """Tell the operator (stderr) about weights that name no router or cannot be read."""
    import sys

    from l3ha.weights import weight_warnings

    for warning in weight_warnings(policy, snapshot.routers):
        sys.stderr.write(f"l3ha: warning: {warning}\n")


def read_weighed_world(
    args: argparse.Namespace, policy: WeightPolicy | None = None, with_ha_state: bool = False
) -> tuple[Snapshot, WeightPolicy]:
    """The snapshot (``--snapshot`` or the cloud) and the weights measured alongside it
    (over ``policy``, by default the weight options')."""
    policy = load_weight_policy(args) if policy is None else policy
    measure_options(args)  # a bad combination fails before anything is read
    check_offline(args)
    if getattr(args, "snapshot", None):
        return read_world(args, with_ha_state), weigh(args, policy, None)
    cloud = open_cloud(args)
    snapshot = cloud.read_snapshot(with_ha_state=with_ha_state)
    return snapshot, weigh(args, policy, cloud)
