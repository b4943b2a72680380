"""Busy weight of routers: a weights file, tags, measured weights, and the busy threshold. Pure.

Where a router's weight comes from (``WeightSource``), highest precedence first:

1. ``file``: its entry in a weights file (``--weights FILE``, router id -> weight);
2. ``tag``: its ``l3ha:weight=N`` tag, else the busy weight when it carries ``l3ha:busy``;
3. a measured weight (``WeightPolicy.measured``, filled by ``l3ha.measurement``):
   ``ports`` (at least ``--busy-ports`` interface ports: the busy weight),
   ``fips`` (at least ``--busy-fips`` floating IPs: the busy weight) or
   ``prometheus`` (its traffic in units of ``--weight-unit``); when several
   measure a router, the largest counts;
4. ``default``: 1.

With ``combine=Combine.MAX`` (``--weight-combine max``) the largest of all the
weights a router has wins instead (a tie goes to the higher precedence). A
router is *busy* when its weight is at or above the busy threshold.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from l3ha.errors import candidates_text
from l3ha.model import Router

BUSY_TAG = "l3ha:busy"
WEIGHT_TAG_PREFIX = "l3ha:weight="
DEFAULT_BUSY_WEIGHT = 10


class WeightSource(StrEnum):
    """Where a router's weight came from (``l3ha router list`` shows it)."""

    FILE = "file"
    TAG = "tag"
    PORTS = "ports"
    FIPS = "fips"
    PROMETHEUS = "prometheus"
    DEFAULT = "default"


#: Measured sources, in the order that wins a tie between equal measured weights.
MEASURED_SOURCES = (WeightSource.PROMETHEUS, WeightSource.FIPS, WeightSource.PORTS)


class Combine(StrEnum):
    """How the sources of one router's weight are combined."""

    PRECEDENCE = "precedence"  # file > tag > measured > 1
    MAX = "max"  # the largest weight any source gives


@dataclass(frozen=True, slots=True)
class Measured:
    """One measured weight of a router and the source that measured it."""

    weight: int
    source: WeightSource


_DEFAULT = Measured(1, WeightSource.DEFAULT)


@dataclass(frozen=True)
class WeightPolicy:
    """How router weights are derived; see the module docstring."""

    busy_weight: int = DEFAULT_BUSY_WEIGHT
    busy_threshold: int = DEFAULT_BUSY_WEIGHT
    overrides: Mapping[str, int] = field(default_factory=dict)
    measured: Mapping[str, Measured] = field(default_factory=dict)
    combine: Combine = Combine.PRECEDENCE

    def weighed(self, router: Router) -> Measured:
        """The router's weight (at least 1) and where it came from: the first of its
        weights in precedence order, or with ``Combine.MAX`` the largest (of equal ones,
        the higher precedence)."""
        weights = self._weights(router)
        if self.combine is Combine.MAX:
            return max(weights, key=lambda m: m.weight, default=_DEFAULT)
        return next(weights, _DEFAULT)

    def _weights(self, router: Router) -> Iterator[Measured]:
        """The router's weights, highest precedence first (each at least 1)."""
        if router.id in self.overrides:
            yield Measured(max(1, self.overrides[router.id]), WeightSource.FILE)
        tagged = self._tag_weight(router)
        if tagged is not None:
            yield Measured(tagged, WeightSource.TAG)
        measured = self.measured.get(router.id)
        if measured is not None:
            yield Measured(max(1, measured.weight), measured.source)

    def weight(self, router: Router) -> int:
        """The load this router puts on an agent (at least 1)."""
        return self.weighed(router).weight

    def source(self, router: Router) -> WeightSource:
        """Where this router's weight came from."""
        return self.weighed(router).source

    def is_plain(self, router: Router) -> bool:
        """Whether the router weighs the default 1, known without weighing it (a fast path)."""
        rid = router.id
        return not router.tags and rid not in self.overrides and rid not in self.measured

    def is_busy(self, router: Router) -> bool:
        """Whether the router counts as busy (spread apart from other busy ones)."""
        return self.weight(router) >= self.busy_threshold

    def _tag_weight(self, router: Router) -> int | None:
        for tag in router.tags:
            if tag.startswith(WEIGHT_TAG_PREFIX):
                value = tag[len(WEIGHT_TAG_PREFIX) :]
                if value.isdigit():
                    return max(1, int(value))
        return self.busy_weight if BUSY_TAG in router.tags else None


def merge_measured(*sources: Mapping[str, Measured]) -> dict[str, Measured]:
    """One measured weight per router: the largest; equal weights go by ``MEASURED_SOURCES``."""
    rank = {source: index for index, source in enumerate(MEASURED_SOURCES)}
    merged: dict[str, Measured] = {}
    for mapping in sources:
        for router_id, measured in mapping.items():
            held = merged.get(router_id)
            if held is None or (measured.weight, -rank.get(measured.source, 99)) > (
                held.weight,
                -rank.get(held.source, 99),
            ):
                merged[router_id] = measured
    return merged


def weight_distribution(policy: WeightPolicy, routers: Iterable[Router]) -> dict[str, int]:
    """How many routers take their weight from each source (every source listed)."""
    counts = {source.value: 0 for source in WeightSource}
    for router in routers:
        counts[policy.source(router).value] += 1
    return counts


def weight_warnings(policy: WeightPolicy, routers: Iterable[Router]) -> list[str]:
    """What an operator should hear about the weights: unknown ids, malformed tags."""
    routers = list(routers)
    known = {r.id for r in routers}
    warnings = []
    unknown = sorted(set(policy.overrides) - known)
    if unknown:
        warnings.append(
            f"weights file names {len(unknown)} unknown router id(s): {candidates_text(unknown)}"
        )
    for router in routers:
        for tag in router.tags:
            value = tag[len(WEIGHT_TAG_PREFIX) :] if tag.startswith(WEIGHT_TAG_PREFIX) else None
            if value is not None and not (value.isdigit() and int(value) >= 1):
                warnings.append(
                    f"router {router.id} has a malformed tag {tag!r} (want {WEIGHT_TAG_PREFIX}N, "
                    "N >= 1); it is ignored"
                )
    return warnings
