"""Placement policy: capacities, AZ strictness, target restriction, tags. Pure.

``PlacementPolicy`` carries the operator's options (``--max-routers-per-agent``,
``--max-weight-per-agent``, ``--strict-az``, ``--to``, canary size). The router
tags ``l3ha:prefer=HOST[,HOST...]`` (soft preference) and
``l3ha:avoid=HOST[,HOST...]`` (hard exclusion) are parsed here; a listed name
matches an agent's host name or its id.
"""

from __future__ import annotations

from dataclasses import dataclass

from l3ha.errors import BadInputError
from l3ha.model import Agent, Router

PREFER_TAG_PREFIX = "l3ha:prefer="
AVOID_TAG_PREFIX = "l3ha:avoid="
DEFAULT_CANARY_SIZE = 3


@dataclass(frozen=True)
class PlacementPolicy:
    """Limits and preferences every planner function honours.

    ``allowed_targets`` holds agent ids (from ``--to``); ``None`` allows every
    eligible agent. ``canary_size`` quiet routers lead an evacuation or drain.
    ``recovery_spread`` (the default): an evacuation spreads its routers over
    the targets' queues (``l3ha.planner.targets``); off, it places by balance
    only, as a drain does (kept for comparisons: ``bench_recovery_placement``).
    """

    max_routers_per_agent: int | None = None
    max_weight_per_agent: int | None = None
    strict_az: bool = False
    allowed_targets: frozenset[str] | None = None
    canary_size: int = DEFAULT_CANARY_SIZE
    recovery_spread: bool = True

    def __post_init__(self) -> None:
        for name in ("max_routers_per_agent", "max_weight_per_agent"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise BadInputError(f"{name.replace('_', '-')} must be >= 0, got {value}")
        if self.canary_size < 0:
            raise BadInputError(f"canary size must be >= 0, got {self.canary_size}")


def _hosts_from_tags(router: Router, prefix: str) -> tuple[str, ...]:
    names: list[str] = []
    for tag in router.tags:
        if tag.startswith(prefix):
            names.extend(n.strip() for n in tag[len(prefix) :].split(",") if n.strip())
    return tuple(names)


def preferred_hosts(router: Router) -> tuple[str, ...]:
    """Hosts (or agent ids) this router should preferably run on."""
    return _hosts_from_tags(router, PREFER_TAG_PREFIX)


def avoided_hosts(router: Router) -> tuple[str, ...]:
    """Hosts (or agent ids) this router must never be placed on."""
    return _hosts_from_tags(router, AVOID_TAG_PREFIX)


def agent_named(agent: Agent, names: tuple[str, ...]) -> bool:
    """Whether ``names`` lists this agent by host name or id."""
    return agent.host in names or agent.id in names
