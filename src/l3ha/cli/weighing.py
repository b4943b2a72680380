"""The measured-weight options of every command that weighs routers. I/O: the cloud, Prometheus.

``--busy-ports N``, ``--busy-fips N``, ``--weights-prometheus URL``,
``--weights-query PROMQL``, ``--weight-unit X``, ``--max-weight N``,
``--weights-timeout SECONDS`` and ``--weight-combine precedence|max`` (the
rules are in ``l3ha.weights``; the reading in ``l3ha.measurement``). The
commands call ``weigh`` (or ``l3ha.cli.common.read_weighed_world``) once, with the cloud they
opened; warnings go to stderr as ``l3ha: warning: ...`` and never stop the
command.
"""

from __future__ import annotations

import argparse
import sys

from l3ha.cli.argtypes import positive_float, positive_int
from l3ha.errors import BadInputError
from l3ha.measurement import (
    DEFAULT_MAX_WEIGHT,
    DEFAULT_WEIGHT_UNIT,
    MeasureOptions,
    UsageSource,
    apply,
    measure,
)
from l3ha.prometheus import DEFAULT_TIMEOUT
from l3ha.weights import Combine, WeightPolicy


def add_measured_weight_options(group: argparse._ArgumentGroup) -> None:
    """Add the measured-weight options to the "router weights" group."""
    group.add_argument(
        "--busy-ports",
        type=positive_int,
        metavar="N",
        help="a router with at least N interface ports is busy (read in one paged listing)",
    )
    group.add_argument(
        "--busy-fips",
        type=positive_int,
        metavar="N",
        help="a router with at least N floating IPs is busy (read in one paged listing)",
    )
    group.add_argument(
        "--weights-prometheus",
        metavar="URL",
        help="weigh routers by their traffic: the Prometheus server to ask "
        "(e.g. http://127.0.0.1:9090); unreachable: a warning, the other weights apply",
    )
    group.add_argument(
        "--weights-query",
        metavar="PROMQL",
        help="instant vector with a router_id label, e.g. "
        "'sum by (router_id) (rate(router_bytes_total[5m]))'",
    )
    group.add_argument(
        "--weight-unit",
        type=positive_float,
        default=DEFAULT_WEIGHT_UNIT,
        metavar="X",
        help=f"X of the query's value is one unit of weight (default: {DEFAULT_WEIGHT_UNIT:g}, "
        "1 MB/s for a bytes-per-second query)",
    )
    group.add_argument(
        "--max-weight",
        type=positive_int,
        default=DEFAULT_MAX_WEIGHT,
        metavar="N",
        help=f"cap of a traffic weight (default: {DEFAULT_MAX_WEIGHT})",
    )
    group.add_argument(
        "--weights-timeout",
        type=positive_float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"give up on the Prometheus query after this long (default: {DEFAULT_TIMEOUT:g})",
    )
    group.add_argument(
        "--weight-combine",
        choices=[c.value for c in Combine],
        default=Combine.PRECEDENCE.value,
        help="precedence: weights file > tag > measured > 1 (default); "
        "max: the largest weight any source gives",
    )


def measure_options(args: argparse.Namespace) -> MeasureOptions:
    """The measured sources the options turn on (a bad combination is a ``BadInputError``)."""
    return MeasureOptions(
        busy_ports=getattr(args, "busy_ports", None),
        busy_fips=getattr(args, "busy_fips", None),
        prometheus_url=getattr(args, "weights_prometheus", None),
        query=getattr(args, "weights_query", None),
        unit=float(getattr(args, "weight_unit", None) or DEFAULT_WEIGHT_UNIT),
        max_weight=int(getattr(args, "max_weight", None) or DEFAULT_MAX_WEIGHT),
        timeout=float(getattr(args, "weights_timeout", None) or DEFAULT_TIMEOUT),
    )


def combine_mode(args: argparse.Namespace) -> Combine:
    return Combine(getattr(args, "weight_combine", None) or Combine.PRECEDENCE.value)


def check_offline(args: argparse.Namespace) -> None:
    """``--snapshot`` has no cloud to count ports or floating IPs in: refuse, exit 2."""
    if getattr(args, "snapshot", None) and measure_options(args).uses_cloud:
        raise BadInputError(
            "--busy-ports and --busy-fips read the cloud; they cannot be used with --snapshot"
        )


def weigh(
    args: argparse.Namespace, policy: WeightPolicy, cloud: UsageSource | None
) -> WeightPolicy:
    """``policy`` with the measured weights the options ask for (warnings to stderr)."""
    options = measure_options(args)
    if not options.enabled:
        return policy
    measurement = measure(options, cloud, policy.busy_weight)
    for warning in measurement.warnings:
        sys.stderr.write(f"l3ha: warning: {warning}\n")
    return apply(policy, measurement)
