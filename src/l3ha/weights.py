"""Busy weight of routers: tags, a weights file, and the busy threshold. Pure.

A router's weight is, in order of precedence: its entry in a weights file
(``--weights FILE``, router id -> weight), its ``l3ha:weight=N`` tag, the busy
weight when it carries the ``l3ha:busy`` tag, and 1 otherwise. A router is
*busy* when its weight is at or above the busy threshold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from l3ha.errors import candidates_text
from l3ha.model import Router

BUSY_TAG = "l3ha:busy"
WEIGHT_TAG_PREFIX = "l3ha:weight="
DEFAULT_BUSY_WEIGHT = 10


@dataclass(frozen=True)
class WeightPolicy:
    """How router weights are derived; see the module docstring."""

    busy_weight: int = DEFAULT_BUSY_WEIGHT
    busy_threshold: int = DEFAULT_BUSY_WEIGHT
    overrides: Mapping[str, int] = field(default_factory=dict)

    def weight(self, router: Router) -> int:
        """The load this router puts on an agent (at least 1)."""
        if router.id in self.overrides:
            return max(1, self.overrides[router.id])
        for tag in router.tags:
            if tag.startswith(WEIGHT_TAG_PREFIX):
                value = tag[len(WEIGHT_TAG_PREFIX) :]
                if value.isdigit():
                    return max(1, int(value))
        if BUSY_TAG in router.tags:
            return self.busy_weight
        return 1

    def is_busy(self, router: Router) -> bool:
        """Whether the router counts as busy (spread apart from other busy ones)."""
        return self.weight(router) >= self.busy_threshold


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
