"""The data l3ha reasons about: agents, routers, bindings, snapshots, plans. Pure.

Every object is a frozen dataclass, so a snapshot read from the cloud (or a
file) can be handed to the pure core without fear of it changing underneath.
Agent references given by operators (host name or id) are resolved here, with
one-line errors that list the candidates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Generic, Protocol, TypeVar

from l3ha.errors import AmbiguousError, NotFoundError, candidates_text

T = TypeVar("T")

#: The shortest id prefix that names an agent or a router (when unique).
MIN_ID_PREFIX = 4


class AgentMode(StrEnum):
    """The ``agent_mode`` of an L3 agent."""

    LEGACY = "legacy"
    DVR = "dvr"
    DVR_SNAT = "dvr_snat"
    DVR_NO_EXTERNAL = "dvr_no_external"


class HAState(StrEnum):
    """The ``ha_state`` Neutron reports for one replica of an HA router."""

    ACTIVE = "active"
    STANDBY = "standby"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Agent:
    """One L3 agent as the API reported it.

    ``alive`` is the server's own judgement (heartbeat younger than
    ``agent_down_time`` on the server's clock); l3ha's health module makes its
    own from the heartbeat value changing. Timestamps are kept as the server
    sent them (agent timestamps are naive UTC ``YYYY-MM-DD HH:MM:SS``).
    """

    id: str
    host: str
    availability_zone: str = "nova"
    mode: AgentMode = AgentMode.LEGACY
    admin_state_up: bool = True
    alive: bool = True
    heartbeat_timestamp: str = ""
    started_at: str = ""
    description: str = ""

    @property
    def usable(self) -> bool:
        """Alive AND enabled: the one test of whether an agent can serve routers now.

        A live but disabled agent has torn its routers down (NEUTRON.md), so it
        is no more usable than a dead one.
        """
        return self.alive and self.admin_state_up

    @property
    def can_host_centralized(self) -> bool:
        """Whether this agent's mode can host legacy routers and DVR snat."""
        return self.mode in (AgentMode.LEGACY, AgentMode.DVR_SNAT)


def down_word(agent: Agent | None) -> str:
    """What an agent that does not serve is: "dead" or "disabled" ("unknown": no agent)."""
    if agent is None:
        return "unknown"
    return "dead" if not agent.alive else "disabled"


@dataclass(frozen=True, slots=True)
class Router:
    """One Neutron router and the attributes placement cares about."""

    id: str
    name: str = ""
    ha: bool = False
    distributed: bool = False
    availability_zone_hints: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    project_id: str = ""
    admin_state_up: bool = True
    status: str = "ACTIVE"
    gateway_ips: tuple[str, ...] = ()  # external gateway addresses (data-plane probe)


@dataclass(frozen=True, slots=True)
class Binding:
    """Router ``router_id`` is scheduled to agent ``agent_id``."""

    router_id: str
    agent_id: str
    ha_state: HAState | None = None


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


IdT = TypeVar("IdT", bound=_HasId)


class IdIndex(Generic[IdT]):
    """A snapshot's look-up by id of the objects in one of its fields, built on first use and
    kept, as ``cached_property`` does: ``routers_by_id = IdIndex[Router]("routers")``."""

    def __init__(self, field_name: str) -> None:
        self.field_name = field_name
        self.name = field_name

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, snapshot: object, owner: type | None = None) -> Mapping[str, IdT]:
        index = {item.id: item for item in getattr(snapshot, self.field_name)}
        snapshot.__dict__[self.name] = index  # found before this descriptor from now on
        return index


@dataclass(frozen=True)
class AgentView:
    """What the snapshots of every kind of agent share: the agents, indexed by id."""

    agents: tuple[Agent, ...]

    agents_by_id = IdIndex[Agent]("agents")


@dataclass(frozen=True)
class Snapshot(AgentView):
    """The cloud as observed at one moment: agents, routers and their bindings.

    ``observed_at`` is the observer's UTC wall time in ISO 8601 form.
    Look-ups are indexed lazily; the snapshot itself never changes.
    """

    routers: tuple[Router, ...]
    bindings: tuple[Binding, ...]
    observed_at: str = ""

    routers_by_id = IdIndex[Router]("routers")

    @cached_property
    def _bindings_by_router(self) -> Mapping[str, tuple[Binding, ...]]:
        return group_by(self.bindings, lambda b: b.router_id)

    @cached_property
    def _bindings_by_agent(self) -> Mapping[str, tuple[Binding, ...]]:
        return group_by(self.bindings, lambda b: b.agent_id)

    def bindings_of_router(self, router_id: str) -> tuple[Binding, ...]:
        """Every binding of one router (empty when it is unhosted)."""
        return self._bindings_by_router.get(router_id, ())

    def bindings_of_agent(self, agent_id: str) -> tuple[Binding, ...]:
        """Every binding on one agent."""
        return self._bindings_by_agent.get(agent_id, ())

    def unhosted_routers(self) -> tuple[Router, ...]:
        """Routers with no binding at all."""
        return tuple(r for r in self.routers if r.id not in self._bindings_by_router)

    def find_agent(self, ref: str) -> Agent:
        """Resolve an agent given by id, id prefix or host name.

        An exact id wins, then an exact host, then a unique id prefix of at
        least 4 characters. Raises ``NotFoundError`` or ``AmbiguousError``
        with the candidates.
        """
        return resolve_agent(self.agents, ref)

    def find_router(self, ref: str) -> Router:
        """Resolve a router given by id, a unique name or a unique id prefix (at least
        ``MIN_ID_PREFIX`` characters, as for agents)."""
        if ref in self.routers_by_id:
            return self.routers_by_id[ref]
        prefix = ref if len(ref) >= MIN_ID_PREFIX else None
        for what, found in (
            ("name", [r for r in self.routers if r.name and r.name == ref]),
            ("id prefix", [r for r in self.routers if prefix and r.id.startswith(prefix)]),
        ):
            if len(found) == 1:
                return found[0]
            if found:
                raise AmbiguousError(
                    f"router {what} {ref!r} is ambiguous: {candidates_text(r.id for r in found)}"
                )
        raise NotFoundError(f"no router with id, name or id prefix {ref!r}")


def group_by(items: Iterable[T], key: Callable[[T], str]) -> dict[str, tuple[T, ...]]:
    """``items`` grouped by ``key``, each group in their order (the snapshots' indexes)."""
    index: dict[str, list[T]] = {}
    for item in items:
        index.setdefault(key(item), []).append(item)
    return {k: tuple(v) for k, v in index.items()}


def resolve_agent(
    agents: Sequence[Agent],
    ref: str,
    *,
    kind: str = "L3 agent",
    listed: str = "known hosts",
    label: Callable[[Agent], str] = lambda a: f"{a.id} ({a.mode})",
    before_prefix: Callable[[str], None] | None = None,
) -> Agent:
    """Find one ``kind`` agent by id, host name or unique id prefix (see
    ``Snapshot.find_agent``); ``label`` names the candidates of an ambiguous host,
    ``before_prefix`` may refuse the reference before prefixes are tried."""
    ref = ref.strip()
    exact = [a for a in agents if a.id == ref][:1] or [a for a in agents if a.host == ref]
    if len(exact) == 1:
        return exact[0]
    if exact:
        choices = candidates_text(label(a) for a in exact)
        raise AmbiguousError(f"host {ref!r} has several {kind}s: {choices}; give the agent id")
    if before_prefix is not None:
        before_prefix(ref)
    if len(ref) >= MIN_ID_PREFIX:
        by_prefix = [a for a in agents if a.id.startswith(ref)]
        if len(by_prefix) == 1:
            return by_prefix[0]
        if by_prefix:
            raise AmbiguousError(
                f"agent id prefix {ref!r} is ambiguous: {candidates_text(a.id for a in by_prefix)}"
            )
    near = [a.host for a in agents if ref.lower() in a.host.lower()]
    if near:
        hint = f"; did you mean: {candidates_text(near)}"
    else:
        hint = f"; {listed}: {candidates_text(a.host for a in agents)}"
    raise NotFoundError(f"no {kind} with host or id {ref!r}{hint}")


class MoveKind(StrEnum):
    """What one step of a plan does to a router's bindings."""

    MOVE = "move"  # unbind from source, bind to target (legacy routers, DVR snat)
    BIND = "bind"  # bind an unhosted router
    ADD_REPLICA = "add_replica"  # HA: add a binding on target, source binding stays
    REMOVE_REPLICA = "remove_replica"  # HA: remove the binding on source


@dataclass(frozen=True, slots=True)
class Move:
    """One change to one router, with the reason an operator will read."""

    router_id: str
    kind: MoveKind
    target: str | None
    source: str | None = None
    reason: str = ""

    @property
    def object_id(self) -> str:
        return self.router_id


@dataclass(frozen=True, slots=True)
class Unplaceable:
    """A router the planner could not place, and why."""

    router_id: str
    reason: str


class HaltReason(StrEnum):
    """Why a safety gate stopped a plan or the daemon."""

    CONTROL_PLANE_SUSPECT = "control_plane_suspect"
    RECOVERY_GRACE = "recovery_grace"
    NO_TARGETS = "no_targets"
    AZ_OUTAGE = "az_outage"  # most agents of one availability zone missed heartbeats at once
    CLOCK_JUMP = "clock_jump"  # our wall clock or the server's heartbeat clock jumped
    STALE_SNAPSHOT = "stale_snapshot"  # the cycle's read failed or took longer than the interval


@dataclass(frozen=True)
class Halt:
    """A refusal to act: the reason and the evidence behind it."""

    reason: HaltReason
    message: str
    evidence: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Plan:
    """Ordered moves for one action, plus what could not be placed.

    ``lower_bound`` is the fewest moves any plan could use (rebalance), when known.
    ``canary`` is how many leading moves form the canary batch: the executor
    re-checks the source agent after them, before running the rest (0: none).
    """

    action: str
    moves: tuple[Move, ...] = ()
    unplaceable: tuple[Unplaceable, ...] = ()
    warnings: tuple[str, ...] = ()
    lower_bound: int | None = None
    canary: int = 0
