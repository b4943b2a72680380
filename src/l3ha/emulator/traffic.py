"""Per-router traffic counters of the emulated cloud, in the Prometheus text format. Pure.

(It reads the world, the simulation and the clock it is given; the server
serves ``render()`` at ``GET /_emulator/metrics``.)

Every router forwards at a steady rate drawn from the seed: a quiet router
8-12 kB/s, a busy one 15-100 times the quiet base (150 kB/s to 1 MB/s) — one to
two orders of magnitude more. Busy means tagged (its tag weight is at least
the busy weight: ``l3ha:busy`` or ``l3ha:weight=N``) or *hot*: one of the
``cfg.hot`` routers the seed picks among the untagged ones, busy by traffic
alone. Packets are bytes / 800.

Counters grow only while the router forwards (``reachable``), attributed to
the host of the agent that forwards it (HA: the master), so a dead agent's
routers stop counting and a moved router counts on under its new host:

    l3ha_emulator_router_bytes_total{router_id="...",host="net-1"} 123456
    l3ha_emulator_router_packets_total{router_id="...",host="net-1"} 154

``settle(router)`` books the time up to now; the server calls it whenever a
router's reachability changes, and ``render`` settles every router first.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from l3ha.emulator.config import EmulatorConfig
from l3ha.emulator.records import BUSY_WEIGHT, RouterRec
from l3ha.emulator.sim import Simulation
from l3ha.emulator.world import World

if TYPE_CHECKING:  # the protocol only: time comes from the clock a caller injects
    from l3ha.clock import Clock

QUIET_RATE = (8_000.0, 12_000.0)  # bytes per second
BUSY_FACTOR = (15.0, 100.0)  # times the quiet base rate (10 kB/s)
QUIET_BASE = 10_000.0
BYTES_PER_PACKET = 800.0
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_HEADER = (
    "# HELP l3ha_emulator_router_bytes_total Bytes a router forwarded, by forwarding host.\n"
    "# TYPE l3ha_emulator_router_bytes_total counter\n"
    "# HELP l3ha_emulator_router_packets_total Packets a router forwarded, by forwarding host.\n"
    "# TYPE l3ha_emulator_router_packets_total counter\n"
)


def hot_router_ids(world: World, count: int, seed: int) -> set[str]:
    """The ``count`` untagged routers the seed makes busy by traffic alone."""
    untagged = [r for r in sorted(world.routers.values(), key=lambda r: r.index) if not r.tags]
    return {r.id for r in random.Random(f"hot-{seed}").sample(untagged, min(count, len(untagged)))}


class TrafficMeter:
    """The counters of one emulated cloud (callers hold ``world.lock``)."""

    def __init__(self, world: World, sim: Simulation, cfg: EmulatorConfig, clock: Clock) -> None:
        self.world = world
        self.sim = sim
        self.clock = clock
        self.seed = cfg.seed
        self.hot = hot_router_ids(world, cfg.hot, cfg.seed)
        self._bytes: dict[tuple[str, str], float] = {}
        # router id -> (monotonic time booked up to, host forwarding since then or None)
        self._booked: dict[str, tuple[float, str | None]] = {}

    def is_busy(self, router: RouterRec) -> bool:
        """Busy routers carry 15-100 times the traffic (tagged busy, or hot)."""
        return router.weight >= BUSY_WEIGHT or router.id in self.hot

    def rate(self, router: RouterRec) -> float:
        """Bytes per second while forwarding (steady; drawn from the seed and router id)."""
        draw = random.Random(f"{self.seed}-{router.id}").random()
        if self.is_busy(router):
            low, high = BUSY_FACTOR
            return QUIET_BASE * (low + (high - low) * draw)
        low, high = QUIET_RATE
        return low + (high - low) * draw

    def forwarding_host(self, router: RouterRec) -> str | None:
        """The host of the agent forwarding the router now; None when it does not forward."""
        if not router.reachable:
            return None
        copies = self.sim.forwarding_copies(router)
        return copies[0].agent.host if copies else None

    def settle(self, router: RouterRec) -> None:
        """Book the traffic since the last booking to the host that forwarded it."""
        now = self.clock.monotonic()
        booked = self._booked.get(router.id)
        since, host = booked if booked is not None else self._first_booking(router, now)
        if host is not None:
            key = (router.id, host)
            gained = max(0.0, now - since) * self.rate(router)
            self._bytes[key] = self._bytes.get(key, 0.0) + gained
        self._booked[router.id] = (now, self.forwarding_host(router))

    def _first_booking(self, router: RouterRec, now: float) -> tuple[float, str | None]:
        """A router not seen before has forwarded since its reachability last changed."""
        host = self.forwarding_host(router)
        if host is None:
            return now, None
        forwarding_for = (self.clock.wall() - router.since).total_seconds()
        return now - max(0.0, forwarding_for), host

    def counters(self) -> dict[tuple[str, str], float]:
        """(router id, host) -> bytes so far, every router settled to now."""
        for router in list(self.world.routers.values()):
            self.settle(router)
        return dict(self._bytes)

    def render(self) -> str:
        """The counters in the Prometheus text exposition format (version 0.0.4)."""
        counters = self.counters()
        lines = [_HEADER]
        for (router_id, host), count in sorted(counters.items()):
            labels = f'router_id="{router_id}",host="{_escape(host)}"'
            lines.append(f"l3ha_emulator_router_bytes_total{{{labels}}} {int(count)}\n")
            packets = int(count / BYTES_PER_PACKET)
            lines.append(f"l3ha_emulator_router_packets_total{{{labels}}} {packets}\n")
        return "".join(lines)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
