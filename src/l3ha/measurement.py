"""Measured router weights: interface ports, floating IPs and traffic. I/O: the cloud, Prometheus.

``measure(options, usage, busy_weight)`` takes one reading of every source the
options turn on and returns a ``Measurement``: router id -> ``Measured``
(weight and source), the warnings to show, and what the reading cost.

- ``ports``: a router with at least ``busy_ports`` interface ports weighs the
  busy weight; ``fips``: likewise with ``busy_fips`` floating IPs. Both are
  read through ``usage`` (``NeutronCloud.usage()``): one paged listing each
  for the whole cloud.
- ``prometheus``: the instant vector ``query`` (one value per ``router_id``)
  divided by ``unit``, rounded, at least 1 and at most ``max_weight``.

A source that cannot be read (Prometheus unreachable or answering nonsense, a
listing that fails) gives a warning and no weights; the other sources still
count. Measuring never raises, so it can never stop a failover.

``Weigher`` is the watch daemon's view: it measures again only every
``interval`` seconds of its clock and otherwise hands out the last weights.
``apply`` puts a measurement into a ``WeightPolicy`` (the planner stays pure:
it receives the weights).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Protocol

from l3ha.clock import Clock
from l3ha.cloud.usage import RouterUsage
from l3ha.errors import BadInputError, L3haError
from l3ha.prometheus import DEFAULT_TIMEOUT, query_by_router
from l3ha.weights import Measured, WeightPolicy, WeightSource, merge_measured

DEFAULT_MAX_WEIGHT = 100
DEFAULT_WEIGHT_UNIT = 1_000_000.0
DEFAULT_WEIGHTS_INTERVAL = 300.0


class UsageSource(Protocol):
    """What can count routers' ports and floating IPs (``NeutronCloud``)."""

    def usage(self) -> RouterUsage: ...


#: ``query_by_router``'s shape: (url, promql, timeout) -> router id -> value.
PrometheusQuery = Callable[[str, str, float], dict[str, float]]


@dataclass(frozen=True)
class MeasureOptions:
    """Which measured sources are on and how they turn into weights."""

    busy_ports: int | None = None
    busy_fips: int | None = None
    prometheus_url: str | None = None
    query: str | None = None
    unit: float = DEFAULT_WEIGHT_UNIT
    max_weight: int = DEFAULT_MAX_WEIGHT
    timeout: float = DEFAULT_TIMEOUT

    def __post_init__(self) -> None:
        if self.prometheus_url is not None:
            if not self.prometheus_url.startswith(("http://", "https://")):
                raise BadInputError(
                    f"--weights-prometheus {self.prometheus_url!r}: expected an http:// or "
                    "https:// URL such as http://127.0.0.1:9090"
                )
            if not self.query:
                raise BadInputError(
                    "--weights-prometheus needs --weights-query PROMQL (an instant vector "
                    "with a router_id label)"
                )
        elif self.query:
            raise BadInputError("--weights-query needs --weights-prometheus URL")
        if not (math.isfinite(self.unit) and self.unit > 0):
            raise BadInputError(f"--weight-unit {self.unit!r}: must be a number above 0")

    @property
    def uses_cloud(self) -> bool:
        """Whether a source reads the cloud (ports or floating IPs)."""
        return self.busy_ports is not None or self.busy_fips is not None

    @property
    def enabled(self) -> bool:
        return self.uses_cloud or self.prometheus_url is not None


@dataclass(frozen=True)
class Measurement:
    """One reading of the measured sources."""

    measured: Mapping[str, Measured] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    calls: int = 0
    seconds: float = 0.0


def busy_from_counts(
    counts: Mapping[str, int], threshold: int, busy_weight: int, source: WeightSource
) -> dict[str, Measured]:
    """Routers with at least ``threshold`` of something weigh ``busy_weight``. Pure."""
    return {
        router_id: Measured(busy_weight, source)
        for router_id, count in counts.items()
        if count >= threshold
    }


def traffic_weights(
    values: Mapping[str, float], unit: float, max_weight: int
) -> dict[str, Measured]:
    """Traffic in units of ``unit``, rounded, within 1..``max_weight``. Pure."""
    return {
        router_id: Measured(min(max_weight, max(1, round(value / unit))), WeightSource.PROMETHEUS)
        for router_id, value in values.items()
    }


def measure(
    options: MeasureOptions,
    usage: UsageSource | None,
    busy_weight: int,
    prometheus: PrometheusQuery = query_by_router,
) -> Measurement:
    """One reading of every source ``options`` turns on (see the module docstring)."""
    started = time.monotonic()
    parts: list[dict[str, Measured]] = []
    warnings: list[str] = []
    calls = 0
    for threshold, source in ((options.busy_ports, WeightSource.PORTS),
                              (options.busy_fips, WeightSource.FIPS)):  # fmt: skip
        if threshold is None:
            continue
        calls += 1
        try:
            counts = _count(usage, source)
        except L3haError as exc:
            warnings.append(f"{source.value} weights not read: {exc}; they are left out")
            continue
        parts.append(busy_from_counts(counts, threshold, busy_weight, source))
    if options.prometheus_url and options.query:
        calls += 1
        try:
            values = prometheus(options.prometheus_url, options.query, options.timeout)
        except L3haError as exc:
            warnings.append(f"traffic weights not read: {exc}; the other weights still apply")
        else:
            parts.append(traffic_weights(values, options.unit, options.max_weight))
    return Measurement(merge_measured(*parts), tuple(warnings), calls, time.monotonic() - started)


def _count(usage: UsageSource | None, source: WeightSource) -> dict[str, int]:
    if usage is None:
        raise BadInputError("no cloud to read them from")
    reader = usage.usage()
    return (
        reader.interface_counts() if source is WeightSource.PORTS else reader.floating_ip_counts()
    )


def apply(policy: WeightPolicy, measurement: Measurement) -> WeightPolicy:
    """``policy`` with the measured weights of ``measurement``."""
    return replace(policy, measured=dict(measurement.measured))


@dataclass(eq=False)
class Weigher:
    """Measured weights refreshed every ``interval`` seconds (the watch daemon's)."""

    options: MeasureOptions
    usage: UsageSource | None
    base: WeightPolicy
    _: KW_ONLY
    interval: float
    clock: Clock
    warn: Callable[[str], None]
    prometheus: PrometheusQuery = query_by_router
    last: Measurement | None = field(default=None, init=False)
    refreshes: int = field(default=0, init=False)
    _policy: WeightPolicy = field(init=False)  # the last measured weights
    _due: float | None = field(default=None, init=False)  # when to measure again

    def policy(self) -> WeightPolicy:
        """The weights now: measured again when the interval has passed."""
        if not self.options.enabled:
            return self.base
        now = self.clock.monotonic()
        if self._due is None or now >= self._due:
            self._refresh(now)
        return self._policy

    def _refresh(self, now: float) -> None:
        measurement = measure(self.options, self.usage, self.base.busy_weight, self.prometheus)
        for warning in measurement.warnings:
            self.warn(warning)
        self._policy = apply(self.base, measurement)
        self.last = measurement
        self.refreshes += 1
        self._due = now + self.interval
