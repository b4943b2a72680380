"""The emulated cloud's records: agents, routers, ports, networks, floating IPs, replicas. Pure.

Records are plain mutable dataclasses with slots (50,000 routers must fit in memory),
compared by identity. They are held and indexed by ``l3ha.emulator.world.World`` (and the DHCP
ones by ``l3ha.emulator.dhcp_world.DhcpTables``); every change that affects a
counter goes through a ``World`` method.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import InitVar, dataclass, field
from datetime import datetime, timedelta
from typing import Self

L3_AGENT = "L3 agent"
DHCP_AGENT = "DHCP agent"
BUSY_TAG = "l3ha:busy"
WEIGHT_TAG_PREFIX = "l3ha:weight="
BUSY_WEIGHT = 10

OWNER_GATEWAY = "network:router_gateway"
OWNER_INTERFACE = "network:router_interface"
OWNER_HA_REPLICATED = "network:ha_router_replicated_interface"
OWNER_HA_INTERFACE = "network:router_ha_interface"
OWNER_DVR_INTERFACE = "network:router_interface_distributed"
OWNER_SNAT = "network:router_centralized_snat"


@dataclass(slots=True, eq=False)
class NetworkRec:
    """A network with one subnet (enough for router ports)."""

    id: str
    subnet_id: str
    name: str
    cidr_base: str
    external: bool
    project_id: str
    created_at: datetime
    az_hints: list[str] = field(default_factory=list)


@dataclass(slots=True, eq=False)
class Work:
    """What one agent (L3 or DHCP) is told to set up and is setting up, by object id."""

    queue: deque[str] = field(default_factory=deque)  # RPC-added objects (processed first)
    sync_queue: deque[str] = field(default_factory=deque)  # full-resync work
    inflight: dict[str, float] = field(default_factory=dict)  # id -> when it is done
    generation: int = 0

    def next_up(self, concurrency: int) -> Iterator[str]:
        """Queued ids to start (the caller puts each in ``inflight`` or skips it)."""
        while (self.queue or self.sync_queue) and len(self.inflight) < concurrency:
            object_id = (self.queue or self.sync_queue).popleft()
            if object_id not in self.inflight:
                yield object_id

    def completed(self, object_id: str, generation: int, done: float) -> bool:
        """Whether the completion due at ``done`` counts: not abandoned or restarted since."""
        if generation != self.generation or self.inflight.get(object_id) != done:
            return False
        del self.inflight[object_id]
        return True

    def resync(self, unprocessed: Iterable[str]) -> None:
        """A full resync queues the ids not set up that are not queued or in flight."""
        waiting = {*self.queue, *self.sync_queue, *self.inflight}
        self.sync_queue.extend(i for i in unprocessed if i not in waiting)

    def abandon(self) -> Self:
        """Drop the queued and in-flight work (a new generation: late completions are void)."""
        self.generation += 1
        self.inflight.clear()
        self.queue.clear()
        self.sync_queue.clear()
        return self


@dataclass(slots=True, eq=False)
class AgentRec:
    """One Neutron agent and the simulated process behind it."""

    id: str
    index: int
    host: str
    az: str
    agent_type: str
    mode: str
    now: InitVar[datetime]
    admin_state_up: bool = True
    description: str | None = None
    created_at: datetime = field(init=False)
    started_at: datetime = field(init=False)
    heartbeat: datetime = field(init=False)
    routers: dict[str, RouterRec] = field(default_factory=dict)
    ex_gw_ports: int = 0
    interfaces: int = 0
    floating_ips: int = 0
    weight: int = 0
    # simulation state
    running: bool = True
    stopped: bool = False  # the agent process is stopped (namespaces stay, they forward)
    start_unreported: bool = False  # started, not yet reported (the server's started_at)
    dataplane_ok: bool = True
    partition_until: float = 0.0
    broker_until: float = 0.0
    # lost the message bus since its last full sync: resyncs on reconnection
    cut_off: bool = False
    slow_factor: float = 1.0
    work: Work = field(default_factory=Work)  # routers to set up
    # routers unbound while the agent was cut off: it still runs them (router id -> copy)
    stale: dict[str, Replica] = field(default_factory=dict)
    # the HA state-change batch notifier sleeps until then after a send
    notify_busy_until: float = 0.0

    def __post_init__(self, now: datetime) -> None:
        self.created_at = now - timedelta(days=30)
        self.started_at = now - timedelta(hours=1)
        self.heartbeat = now

    @property
    def is_l3(self) -> bool:
        return self.agent_type == L3_AGENT


@dataclass(slots=True, eq=False)
class Replica:
    """A router's binding to one agent, with what that agent has done with it."""

    agent: AgentRec
    processed: bool = False
    # the agent has fetched the router (sync_routers): its HA port is bound to its host
    synced: bool = False
    vrrp: str = "backup"  # master | backup (the real keepalived state)
    reported: str = "standby"  # what the server believes: active | standby | unknown
    pending: str | None = None  # a state change on its way to the server
    ha_port: PortRec | None = None


@dataclass(slots=True, eq=False)
class RouterRec:
    """One router with its ports, bindings and data-plane record."""

    id: str
    index: int
    name: str
    project_id: str
    network: NetworkRec
    now: InitVar[datetime]
    description: str = ""
    admin_state_up: bool = True
    ha: bool = False
    distributed: bool = False
    az_hints: list[str] = field(default_factory=list)
    created_at: datetime = field(init=False)
    updated_at: datetime = field(init=False)
    revision: int = 3
    tags: list[str] = field(default_factory=list)
    has_gateway: bool = True
    ports: list[PortRec] = field(default_factory=list)
    fips: list[FipRec] = field(default_factory=list)
    bindings: dict[str, Replica] = field(default_factory=dict)
    # copies on agents that were cut off when it was unbound (agent id -> copy)
    stale: dict[str, Replica] = field(default_factory=dict)
    # binding:host_id and status of the central ports (gateway, interfaces, SNAT)
    ports_host: str = ""
    ports_status: str = "DOWN"
    election_due: float | None = None
    split_brain_until: float = 0.0
    weight: int = 1
    reachable: bool = False
    since: datetime = field(init=False)
    downtime: float = 0.0
    down_since: float | None = None
    listener: str | None = None

    def __post_init__(self, now: datetime) -> None:
        self.created_at = self.updated_at = self.since = now

    @property
    def interfaces(self) -> int:
        return sum(1 for p in self.ports if p.owner in INTERFACE_OWNERS)


INTERFACE_OWNERS = frozenset({OWNER_INTERFACE, OWNER_HA_REPLICATED, OWNER_DVR_INTERFACE})


@dataclass(slots=True, eq=False)
class PortRec:
    """A router port (gateway, interface, HA, SNAT)."""

    id: str
    mac: str
    network: NetworkRec
    ip: str
    owner: str
    router: RouterRec
    created_at: datetime
    replica: Replica | None = None


@dataclass(slots=True, eq=False)
class FipRec:
    """A floating IP associated with an address behind a router."""

    id: str
    router: RouterRec
    address: str
    fixed: str
    port_id: str
    created_at: datetime


def router_weight(tags: list[str]) -> int:
    """Busy weight from tags: ``l3ha:weight=N``, else ``l3ha:busy`` (10), else 1."""
    for tag in tags:
        if tag.startswith(WEIGHT_TAG_PREFIX) and tag[len(WEIGHT_TAG_PREFIX):].isdigit():
            return max(1, int(tag[len(WEIGHT_TAG_PREFIX):]))
    return BUSY_WEIGHT if BUSY_TAG in tags else 1
