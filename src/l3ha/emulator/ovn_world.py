"""The emulated ML2/OVN gateway plane: chassis, HA chassis groups, gateway moves. Pure.

Times are passed in (``now``: monotonic seconds, ``wall``: epoch seconds); nothing here
reads a clock. The model follows what Neutron 29 and OVN 23.03 do (docs/ovn.md):

- a gateway chassis acknowledges NB_Global.nb_cfg while ovn-controller runs and the
  southbound database is reachable; Neutron shows its agent alive while
  ``nb_cfg - acknowledged <= 1`` or the acknowledgement is younger than agent_down_time,
  and every gateway agent dead while the southbound database is out;
- each router has an HA chassis group (chassis name -> priority, 0..32767); its gateway
  is on the highest-priority chassis BFD sees up. A crashed chassis still counts as up
  for ``bfd_detection_time``; the survivor then claims the port (``claim_time``). A
  priority change or removal moves a live gateway gracefully (``graceful_move_time``: the
  first gratuitous ARP comes about 1 s after the claim); a returning chassis pre-empts
  its routers back (``failback_time``). While a gateway moves it is dark.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

GATEWAY_AGENT_TYPE = "OVN Controller Gateway agent"
LOWEST_PRIORITY = 0
HIGHEST_PRIORITY = 32767
# Neutron's MAX_GW_CHASSIS: a router is scheduled on at most this many chassis, and a
# chassis added without a priority gets min(existing, this + 1) - 1.
MAX_GW_CHASSIS = 5


class MoveKind(StrEnum):
    """Why a router's gateway changed chassis."""

    FAILOVER = "failover"
    FAILBACK = "failback"
    GRACEFUL = "graceful"
    FIRST = "first"


@dataclass(frozen=True)
class OvnTimings:
    """How long OVN takes to notice and to move a gateway, in seconds."""

    bfd_detection_time: float = 3.0
    claim_time: float = 0.5
    graceful_move_time: float = 1.0
    failback_time: float = 1.4


@dataclass
class Chassis:
    """One gateway chassis (ovn-controller with enable-chassis-as-gw)."""

    name: str
    host: str
    az: str
    running: bool = True
    crashed_at: float | None = None
    nb_cfg: int = 0
    nb_cfg_wall: float = 0.0
    created_wall: float = 0.0


@dataclass(frozen=True)
class Outage:
    """A span during which a router's gateway was dark."""

    start: float
    end: float
    kind: MoveKind


@dataclass
class Gateway:
    """One router's HA chassis group and where its gateway port is bound."""

    router_id: str
    priorities: dict[str, int] = field(default_factory=dict)
    bound: str | None = None
    dark_until: float = 0.0
    forwarding: bool = False
    dark_since: float | None = None
    dark_kind: MoveKind = MoveKind.FIRST
    outages: list[Outage] = field(default_factory=list)
    moves: int = 0

    def ordered(self) -> list[tuple[str, int]]:
        """Chassis by priority, highest first."""
        return sorted(self.priorities.items(), key=lambda item: (-item[1], item[0]))


class OvnWorld:
    """Every gateway chassis and router gateway of the emulated ML2/OVN cloud."""

    def __init__(self, timings: OvnTimings, agent_down_time: float) -> None:
        self.timings = timings
        self.agent_down_time = agent_down_time
        self.chassis: dict[str, Chassis] = {}
        self.gateways: dict[str, Gateway] = {}
        self.nb_cfg = 0
        self.sb_out_until = 0.0
        self.last_ping: float | None = None
        # Times at which a gateway's state will change (a move ends, BFD notices a crash),
        # for the simulation to wake up at; it drains the list.
        self.wakeups: list[float] = []

    # --- chassis and heartbeats -------------------------------------------------------

    def add_chassis(self, name: str, host: str, az: str, wall: float) -> Chassis:
        chassis = Chassis(name, host, az, nb_cfg=self.nb_cfg, nb_cfg_wall=wall, created_wall=wall)
        self.chassis[name] = chassis
        return chassis

    def sb_out(self, now: float) -> bool:
        return now < self.sb_out_until

    def ping(self, now: float, wall: float) -> None:
        """What Neutron does on every agent listing (``ping_all_chassis``): bump
        NB_Global.nb_cfg unless it did within ``max(agent_down_time // 2, 1)`` s; then every
        running chassis that reaches the southbound database acknowledges the latest one."""
        interval = max(self.agent_down_time // 2, 1.0)
        if self.last_ping is None or now >= self.last_ping + interval:
            self.nb_cfg += 1
            self.last_ping = now
        if self.sb_out(now):
            return
        for chassis in self.chassis.values():
            if chassis.running and chassis.nb_cfg != self.nb_cfg:
                chassis.nb_cfg = self.nb_cfg
                chassis.nb_cfg_wall = wall

    def alive(self, chassis: Chassis, now: float, wall: float) -> bool:
        """Neutron's rule (neutron_agent.NeutronAgent.alive); all dead while SB is out."""
        if self.sb_out(now):
            return False
        if self.nb_cfg - chassis.nb_cfg <= 1:
            return True
        return wall - chassis.nb_cfg_wall < self.agent_down_time

    def crash(self, name: str, now: float) -> None:
        chassis = self.chassis[name]
        if chassis.running:
            chassis.running = False
            chassis.crashed_at = now
            self.wakeups.append(now + self.timings.bfd_detection_time)

    def revive(self, name: str, wall: float) -> None:
        """The chassis restarts; ovn-controller acknowledges the current nb_cfg on connecting."""
        chassis = self.chassis[name]
        chassis.running = True
        chassis.crashed_at = None
        chassis.nb_cfg = self.nb_cfg
        chassis.nb_cfg_wall = wall

    def bfd_up(self, name: str, now: float) -> bool:
        """Whether the other chassis still see ``name`` up (BFD has not timed out yet)."""
        chassis = self.chassis.get(name)
        if chassis is None:
            return False
        if chassis.running or chassis.crashed_at is None:
            return chassis.running
        return now < chassis.crashed_at + self.timings.bfd_detection_time

    def chassis_created(self, name: str) -> bool:
        """Neutron's reaction to a gateway Chassis row appearing (a new chassis, or every
        chassis again when its southbound connection is re-established): one transaction
        that puts the chassis at ``min - 1`` in every HA chassis group (adding it where it
        was not). A priority below 0 fails the whole transaction: False, nothing changed."""
        placed = {}
        for gateway in self.gateways.values():
            lowest = min(gateway.priorities.values(), default=HIGHEST_PRIORITY)
            if lowest - 1 < LOWEST_PRIORITY:
                return False
            placed[gateway.router_id] = lowest - 1
        for router_id, priority in placed.items():
            self.gateways[router_id].priorities[name] = priority
        return True

    # --- gateways ----------------------------------------------------------------------

    def gateway(self, router_id: str) -> Gateway:
        return self.gateways.setdefault(router_id, Gateway(router_id))

    def target(self, gateway: Gateway, now: float) -> str | None:
        """The chassis the gateway should be bound to: the highest that BFD sees up."""
        for name, _priority in gateway.ordered():
            if self.bfd_up(name, now):
                return name
        return None

    def settle(self, now: float) -> list[str]:
        """Bring every gateway's forwarding state and outage log up to date."""
        changed = []
        for gateway in self.gateways.values():
            forwarding = self.forwards(gateway, now)
            if forwarding != gateway.forwarding:
                self._record(gateway, forwarding, now)
                changed.append(gateway.router_id)
        return changed

    def rebind(self, gateway: Gateway, now: float, reason: MoveKind | None) -> None:
        """Bind the gateway to its target; ``reason`` GRACEFUL for a change made through
        the API, None to tell a failover from a pre-emptive failback by the old chassis."""
        target = self.target(gateway, now)
        if target == gateway.bound:
            return
        previous = gateway.bound
        gateway.bound = target
        if target is None:
            return
        old = self.chassis.get(previous) if previous is not None else None
        timings = self.timings
        if previous is None:
            kind, duration = MoveKind.FIRST, timings.claim_time
        elif old is None or not old.running:
            kind, duration = MoveKind.FAILOVER, timings.claim_time
        elif reason is None:
            kind, duration = MoveKind.FAILBACK, timings.failback_time
        else:
            kind, duration = reason, timings.graceful_move_time
        gateway.dark_until = now + duration
        self.wakeups.append(gateway.dark_until)
        if gateway.forwarding or gateway.dark_since is None:
            gateway.dark_kind = kind
        gateway.moves += 1

    def forwards(self, gateway: Gateway, now: float) -> bool:
        """The gateway forwards: bound to a running chassis and not in the middle of a move."""
        if gateway.bound is None or now < gateway.dark_until:
            return False
        chassis = self.chassis.get(gateway.bound)
        return chassis is not None and chassis.running

    def _record(self, gateway: Gateway, forwarding: bool, now: float) -> None:
        gateway.forwarding = forwarding
        if not forwarding:
            gateway.dark_since = now
            if gateway.bound is not None and not self.chassis[gateway.bound].running:
                gateway.dark_kind = MoveKind.FAILOVER
        elif gateway.dark_since is not None:
            gateway.outages.append(Outage(gateway.dark_since, now, gateway.dark_kind))
            gateway.dark_since = None
