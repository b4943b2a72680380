"""The ML2/OVN side of the cloud: gateway chassis, each router's chassis priorities. Pure.

On ML2/OVN there is no L3 agent. Each gateway chassis shows as an agent of type
"OVN Controller Gateway agent" (a ``model.Agent``, judged like an L3 agent) and a
router's gateway is on a group of chassis, each with an ``ha_chassis_priority``;
the router's primary is its highest-priority chassis that is alive. Neutron lists
a router's chassis in no particular order: this module sorts them.

Agent references (host, id, id prefix) resolve here with one-line errors; the kind of
cloud (``Backend``) is told from the agent types the API lists.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property

from l3ha.errors import AmbiguousError, NotFoundError, candidates_text
from l3ha.model import Agent, IdIndex, Router, group_by

GATEWAY_AGENT_TYPE = "OVN Controller Gateway agent"
L3_AGENT_TYPE = "L3 agent"
#: Neutron's range of ``ha_chassis_priority``.
LOWEST_PRIORITY = 0
HIGHEST_PRIORITY = 32767
#: Live chassis each router keeps by default (``--min-chassis``).
DEFAULT_MIN_CHASSIS = 2


class Backend(StrEnum):
    """Which placement the cloud has: L3 agents or OVN gateway chassis (``--backend``)."""

    AUTO = "auto"
    L3_AGENT = "l3-agent"
    OVN = "ovn"


def detect_backend(agent_types: Iterable[str], wanted: Backend = Backend.AUTO) -> Backend:
    """``wanted`` unless AUTO; else OVN when gateway chassis are listed and no L3 agent is."""
    if wanted is not Backend.AUTO:
        return wanted
    types = set(agent_types)
    if GATEWAY_AGENT_TYPE in types and L3_AGENT_TYPE not in types:
        return Backend.OVN
    return Backend.L3_AGENT


@dataclass(frozen=True, slots=True)
class GatewayBinding:
    """Router ``router_id``'s gateway may run on chassis ``chassis_id`` at ``priority``."""

    router_id: str
    chassis_id: str
    priority: int


@dataclass(frozen=True, slots=True)
class GatewayPort:
    """A router's gateway port as Neutron's port binding shows it: ``host`` empty or
    ``vif_type`` ``binding_failed`` when Neutron failed to bind it."""

    router_id: str
    port_id: str
    host: str
    vif_type: str

    @property
    def unbound(self) -> bool:
        return not self.host or self.vif_type == BINDING_FAILED


#: Neutron's ``binding:vif_type`` of a port it failed to bind.
BINDING_FAILED = "binding_failed"


@dataclass(frozen=True)
class OvnSnapshot:
    """Gateway chassis, routers and their chassis priorities as observed at one moment."""

    chassis: tuple[Agent, ...]
    routers: tuple[Router, ...]
    bindings: tuple[GatewayBinding, ...]
    observed_at: str = ""

    chassis_by_id = IdIndex[Agent]("chassis")
    routers_by_id = IdIndex[Router]("routers")

    @cached_property
    def _groups(self) -> Mapping[str, tuple[GatewayBinding, ...]]:
        groups = group_by(self.bindings, lambda b: b.router_id)
        return {k: tuple(sorted(v, key=_by_priority)) for k, v in groups.items()}

    def group(self, router_id: str) -> tuple[GatewayBinding, ...]:
        """The router's chassis, highest priority first."""
        return self._groups.get(router_id, ())

    def alive(self, chassis_id: str) -> bool:
        chassis = self.chassis_by_id.get(chassis_id)
        return chassis is not None and chassis.alive

    def live_chassis(self, router_id: str) -> tuple[str, ...]:
        """The router's chassis that are alive, highest priority first."""
        return tuple(b.chassis_id for b in self.group(router_id) if self.alive(b.chassis_id))

    def primary(self, router_id: str) -> str | None:
        """The chassis the router's gateway runs on: its highest-priority live chassis."""
        live = self.live_chassis(router_id)
        return live[0] if live else None

    def routers_of(self, chassis_id: str) -> tuple[str, ...]:
        """Routers whose group holds the chassis (sorted)."""
        return tuple(sorted(b.router_id for b in self.bindings if b.chassis_id == chassis_id))

    def primaries_of(self, chassis_id: str) -> tuple[str, ...]:
        """Routers whose primary the chassis is now (sorted)."""
        return tuple(r for r in self.routers_of(chassis_id) if self.primary(r) == chassis_id)

    def find_chassis(self, ref: str) -> Agent:
        """A gateway chassis by id, host or unique id prefix (4+ characters)."""
        return resolve_chassis(self.chassis, ref)


def _by_priority(binding: GatewayBinding) -> tuple[int, str]:
    return (-binding.priority, binding.chassis_id)


def resolve_chassis(chassis: tuple[Agent, ...], ref: str) -> Agent:
    """One gateway chassis by id, host or id prefix; ``NotFoundError``/``AmbiguousError``."""
    ref = ref.strip()
    exact = [c for c in chassis if c.id == ref] or [c for c in chassis if c.host == ref]
    if len(exact) == 1:
        return exact[0]
    if len(ref) >= 4 and not exact:
        exact = [c for c in chassis if c.id.startswith(ref)]
        if len(exact) == 1:
            return exact[0]
    if exact:
        raise AmbiguousError(
            f"gateway chassis {ref!r} is ambiguous: {candidates_text(c.id for c in exact)}"
        )
    raise NotFoundError(
        f"no gateway chassis with host or id {ref!r}; "
        f"gateway chassis on: {candidates_text(c.host for c in chassis) or 'none'}"
    )
