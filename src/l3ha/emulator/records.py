"""The emulated cloud's records: agents, routers, ports, networks, floating IPs, replicas. Pure.

Records are plain mutable objects with ``__slots__`` (50,000 routers must fit in
memory). They are held and indexed by ``l3ha.emulator.world.World`` (and the DHCP
ones by ``l3ha.emulator.dhcp_world.DhcpTables``); every change that affects a
counter goes through a ``World`` method.
"""

from __future__ import annotations

from collections import deque
from datetime import datetime, timedelta

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


class NetworkRec:
    """A network with one subnet (enough for router ports)."""

    __slots__ = ("az_hints", "cidr_base", "created_at", "external", "id", "name", "project_id",
                 "subnet_id")

    def __init__(self, net_id: str, subnet_id: str, name: str, cidr_base: str,  # noqa: PLR0917
                 external: bool, project_id: str, created_at: datetime) -> None:
        self.id = net_id
        self.subnet_id = subnet_id
        self.name = name
        self.cidr_base = cidr_base
        self.external = external
        self.project_id = project_id
        self.created_at = created_at
        self.az_hints: list[str] = []


class AgentRec:
    """One Neutron agent and the simulated process behind it."""

    __slots__ = ("admin_state_up", "agent_type", "az", "broker_until", "created_at",
                 "cut_off", "dataplane_ok", "description", "ex_gw_ports", "floating_ips",
                 "generation", "heartbeat", "host", "id", "index", "inflight", "interfaces",
                 "mode", "notify_busy_until", "partition_until", "queue", "routers", "running",
                 "slow_factor", "stale", "start_unreported", "started_at", "stopped", "sync_queue",
                 "weight")

    def __init__(self, agent_id: str, index: int, host: str, az: str, agent_type: str,  # noqa: PLR0917
                 mode: str, now: datetime) -> None:
        self.id = agent_id
        self.index = index
        self.host = host
        self.az = az
        self.agent_type = agent_type
        self.mode = mode
        self.admin_state_up = True
        self.description: str | None = None
        self.created_at = now - timedelta(days=30)
        self.started_at = now - timedelta(hours=1)
        self.heartbeat = now
        self.routers: dict[str, RouterRec] = {}
        self.ex_gw_ports = 0
        self.interfaces = 0
        self.floating_ips = 0
        self.weight = 0
        # simulation state
        self.running = True
        self.stopped = False  # the agent process is stopped (namespaces stay, they forward)
        self.start_unreported = False  # started, not yet reported (the server's started_at)
        self.dataplane_ok = True
        self.partition_until = 0.0
        self.broker_until = 0.0
        # lost the message bus since its last full sync: resyncs on reconnection
        self.cut_off = False
        self.slow_factor = 1.0
        self.generation = 0
        self.queue: deque[str] = deque()  # RPC-added routers (processed first)
        self.sync_queue: deque[str] = deque()  # full-resync work
        self.inflight: dict[str, float] = {}
        # routers unbound while the agent was cut off: it still runs them (router id -> copy)
        self.stale: dict[str, Replica] = {}
        # the HA state-change batch notifier sleeps until then after a send
        self.notify_busy_until = 0.0

    @property
    def is_l3(self) -> bool:
        return self.agent_type == L3_AGENT


class Replica:
    """A router's binding to one agent, with what that agent has done with it."""

    __slots__ = ("agent", "ha_port", "pending", "processed", "reported", "synced", "vrrp")

    def __init__(self, agent: AgentRec) -> None:
        self.agent = agent
        self.processed = False
        # the agent has fetched the router (sync_routers): its HA port is bound to its host
        self.synced = False
        self.vrrp = "backup"  # master | backup (the real keepalived state)
        self.reported = "standby"  # what the server believes: active | standby | unknown
        self.pending: str | None = None  # a state change on its way to the server
        self.ha_port: PortRec | None = None


class RouterRec:
    """One router with its ports, bindings and data-plane record."""

    __slots__ = ("admin_state_up", "az_hints", "bindings", "created_at", "description",
                 "distributed", "down_since", "downtime", "election_due", "fips", "ha",
                 "has_gateway", "id", "index", "listener", "name", "network", "ports",
                 "ports_host", "ports_status", "project_id", "reachable", "revision", "since",
                 "split_brain_until", "stale", "tags", "updated_at", "weight")

    def __init__(self, router_id: str, index: int, name: str, project_id: str,  # noqa: PLR0917
                 network: NetworkRec, now: datetime) -> None:
        self.id = router_id
        self.index = index
        self.name = name
        self.description = ""
        self.project_id = project_id
        self.admin_state_up = True
        self.ha = False
        self.distributed = False
        self.az_hints: list[str] = []
        self.created_at = now
        self.updated_at = now
        self.revision = 3
        self.tags: list[str] = []
        self.network = network
        self.has_gateway = True
        self.ports: list[PortRec] = []
        self.fips: list[FipRec] = []
        self.bindings: dict[str, Replica] = {}
        # copies on agents that were cut off when it was unbound (agent id -> copy)
        self.stale: dict[str, Replica] = {}
        # binding:host_id and status of the central ports (gateway, interfaces, SNAT)
        self.ports_host = ""
        self.ports_status = "DOWN"
        self.election_due: float | None = None
        self.split_brain_until = 0.0
        self.weight = 1
        self.reachable = False
        self.since = now
        self.downtime = 0.0
        self.down_since: float | None = None
        self.listener: str | None = None

    @property
    def interfaces(self) -> int:
        return sum(1 for p in self.ports if p.owner in INTERFACE_OWNERS)


INTERFACE_OWNERS = frozenset({OWNER_INTERFACE, OWNER_HA_REPLICATED, OWNER_DVR_INTERFACE})


class PortRec:
    """A router port (gateway, interface, HA, SNAT)."""

    __slots__ = ("created_at", "id", "ip", "mac", "network", "owner", "replica", "router")

    def __init__(self, port_id: str, mac: str, network: NetworkRec, ip: str, owner: str,  # noqa: PLR0917
                 router: RouterRec, now: datetime) -> None:
        self.id = port_id
        self.mac = mac
        self.network = network
        self.ip = ip
        self.owner = owner
        self.router = router
        self.created_at = now
        self.replica: Replica | None = None


class FipRec:
    """A floating IP associated with an address behind a router."""

    __slots__ = ("address", "created_at", "fixed", "id", "port_id", "router")

    def __init__(self, fip_id: str, router: RouterRec, address: str, fixed: str,  # noqa: PLR0917
                 port_id: str, now: datetime) -> None:
        self.id = fip_id
        self.router = router
        self.address = address
        self.fixed = fixed
        self.port_id = port_id
        self.created_at = now


def router_weight(tags: list[str]) -> int:
    """Busy weight from tags: ``l3ha:weight=N``, else ``l3ha:busy`` (10), else 1."""
    for tag in tags:
        if tag.startswith(WEIGHT_TAG_PREFIX) and tag[len(WEIGHT_TAG_PREFIX):].isdigit():
            return max(1, int(tag[len(WEIGHT_TAG_PREFIX):]))
    return BUSY_WEIGHT if BUSY_TAG in tags else 1
