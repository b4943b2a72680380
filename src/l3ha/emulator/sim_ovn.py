"""The emulator's OVN mode on the simulation's clock: nb_cfg pings, BFD, gateway moves.

No I/O, but not pure: it changes the world on the simulation's clock.

``OvnSimulation`` owns the ``OvnWorld``: gateway chassis ``gw-1``..``gw-N`` (AZs
round-robin), every router with a gateway scheduled on up to five of them the way
Neutron's least-loaded scheduler does (priorities N..1, primaries spread), Neutron's
ping of NB_Global.nb_cfg on agent listings (``ping``) that running chassis acknowledge,
routers given a gateway through the API scheduled every ``report_interval``, and a step
at each time a move ends or BFD notices a crash (and every ``STEP_SECONDS``). Router
reachability goes through the simulation (``Simulation.gateway_forwards``), so the
data-plane listeners show each gateway's outages. The L3 agents an ML2/OVN cloud does not
have are removed. A router's gateway port is bound to the host of the chassis its gateway
is on (Neutron follows the southbound Port_Binding), unless the ``gateway-unbound`` fault
made Neutron fail to bind it (no host, as Neutron shows a port it refused to bind).
Callers hold ``world.lock``.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from l3ha.emulator.config import EmulatorConfig
from l3ha.emulator.ovn_world import (
    MAX_GW_CHASSIS,
    Chassis,
    Gateway,
    MoveKind,
    OvnTimings,
    OvnWorld,
)
from l3ha.emulator.records import OWNER_GATEWAY, RouterRec

if TYPE_CHECKING:
    from l3ha.emulator.sim import Simulation

STEP_SECONDS = 0.25


class OvnSimulation:
    """The gateway plane of an emulated ML2/OVN cloud."""

    def __init__(self, sim: Simulation, cfg: EmulatorConfig) -> None:
        self.sim = sim
        self.cfg = cfg
        timings = OvnTimings(
            cfg.ovn_bfd_detection_time,
            cfg.ovn_claim_time,
            cfg.ovn_graceful_move_time,
            cfg.ovn_failback_time,
        )
        self.ovn = OvnWorld(timings, cfg.agent_down_time)
        self.unbound: set[str] = set()  # routers whose gateway port failed to bind
        self.rng = random.Random(cfg.seed)
        world = sim.world
        world.agents.clear()
        world.agents_by_host.clear()
        wall = sim.clock.wall().timestamp()
        for i in range(cfg.ovn_chassis):
            name = f"gw-{i + 1}"
            self.ovn.add_chassis(name, name, f"az{i % cfg.azs + 1}", wall)
        for router in world.routers.values():
            router.bindings.clear()
            router.stale.clear()
            self.schedule_router(router)
        sim.gateway_forwards = self.forwards

    # --- scheduling ----------------------------------------------------------------------

    def has_gateway(self, router: RouterRec) -> bool:
        return any(port.owner == OWNER_GATEWAY for port in router.ports)

    def gateway_of(self, router: RouterRec) -> Gateway | None:
        """The router's gateway (scheduled now if it has just got an external gateway)."""
        gateway = self.ovn.gateways.get(router.id)
        if gateway is None and self.has_gateway(router):
            gateway = self.schedule_router(router)
        return gateway

    def schedule_router(self, router: RouterRec) -> Gateway:
        """Least-loaded: the chassis that are primary for the fewest routers rank first."""
        primaries = self.primaries()
        ranked = sorted(self.ovn.chassis.values(), key=lambda c: (primaries.get(c.name, 0), c.name))
        chosen = ranked[:MAX_GW_CHASSIS]
        gateway = self.ovn.gateway(router.id)
        for rank, chassis in enumerate(chosen):
            gateway.priorities[chassis.name] = len(chosen) - rank
        self.ovn.rebind(gateway, self.sim.clock.monotonic(), MoveKind.FIRST)
        gateway.dark_until = 0.0
        self.ovn.wakeups.clear()
        self.bind_port(router)
        return gateway

    def bind_port(self, router: RouterRec) -> None:
        """The router's ports on the host of the chassis its gateway is bound to."""
        gateway = self.ovn.gateways.get(router.id)
        chassis = self.ovn.chassis.get(gateway.bound or "") if gateway is not None else None
        failed = router.id in self.unbound or chassis is None
        router.ports_host = "" if failed or chassis is None else chassis.host

    def fail_binding(self, router: RouterRec) -> None:
        """Neutron fails to bind the router's gateway port (it thinks the agent dead)."""
        self.unbound.add(router.id)
        self.bind_port(router)

    def primaries(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for gateway in self.ovn.gateways.values():
            ordered = gateway.ordered()
            if ordered:
                counts[ordered[0][0]] = counts.get(ordered[0][0], 0) + 1
        return counts

    # --- time ----------------------------------------------------------------------------

    def start(self) -> None:
        now = self.sim.clock.monotonic()
        self.sim.schedule(now + self.cfg.report_interval, self._schedule_new)
        self.sim.schedule(now + STEP_SECONDS, self._step)
        self.refresh()

    def _schedule_new(self) -> None:
        for router in self.sim.world.routers.values():
            self.gateway_of(router)
        self.sim.schedule(self.sim.clock.monotonic() + self.cfg.report_interval, self._schedule_new)

    def ping(self) -> None:
        """An agent listing: Neutron's ping_all_chassis (see ``OvnWorld.ping``)."""
        self.ovn.ping(self.sim.clock.monotonic(), self.sim.clock.wall().timestamp())

    def _step(self) -> None:
        self._wake()
        # a safety net: wakeups are exact
        self.sim.schedule(self.sim.clock.monotonic() + STEP_SECONDS, self._step)

    def _wake(self) -> None:
        """Rebind every gateway whose target changed (a crash seen by BFD, a chassis that
        returned), then ``refresh``."""
        now = self.sim.clock.monotonic()
        for gateway in self.ovn.gateways.values():
            self.ovn.rebind(gateway, now, None)
        self.refresh()

    def refresh(self) -> None:
        """Settle every gateway's state, tell the simulation which routers changed, and
        wake up exactly when a move ends or BFD notices a crash."""
        for at in sorted(set(self.ovn.wakeups)):
            self.sim.schedule(at, self._wake)
        self.ovn.wakeups.clear()
        for router_id in self.ovn.settle(self.sim.clock.monotonic()):
            router = self.sim.world.routers.get(router_id)
            if router is not None:
                self.bind_port(router)
                self.sim.update_reachability(router)

    def forwards(self, router: RouterRec) -> bool:
        gateway = self.ovn.gateways.get(router.id)
        return gateway is not None and self.ovn.forwards(gateway, self.sim.clock.monotonic())

    def summary(self) -> dict[str, Any]:
        """The gateway plane for ``/_emulator/state``: chassis, the southbound outage, and
        each kind of gateway outage so far (count and total seconds)."""
        now = self.sim.clock.monotonic()
        primaries = self.primaries()
        bound: dict[str, int] = {}
        outages: dict[str, dict[str, float]] = {}
        for gateway in self.ovn.gateways.values():
            if gateway.bound is not None:
                bound[gateway.bound] = bound.get(gateway.bound, 0) + 1
            for outage in gateway.outages:
                row = outages.setdefault(outage.kind.value, {"count": 0, "seconds": 0.0})
                row["count"] += 1
                row["seconds"] = round(row["seconds"] + outage.end - outage.start, 3)
        chassis = [
            {
                "name": c.name,
                "host": c.host,
                "az": c.az,
                "running": c.running,
                "alive": self.alive(c),
                "primaries": primaries.get(c.name, 0),
                "hosting": bound.get(c.name, 0),
            }
            for c in self.ovn.chassis.values()
        ]
        dark = sum(1 for g in self.ovn.gateways.values() if not self.ovn.forwards(g, now))
        return {
            "chassis": chassis,
            "sb_outage": self.ovn.sb_out(now),
            "dark": dark,
            "outages": outages,
        }

    # --- API changes and faults -----------------------------------------------------------

    def moved(self, gateway: Gateway) -> None:
        """A priority changed through the API: the gateway moves gracefully if it must."""
        self.ovn.rebind(gateway, self.sim.clock.monotonic(), MoveKind.GRACEFUL)
        self.refresh()

    def alive(self, chassis: Chassis) -> bool:
        clock = self.sim.clock
        return self.ovn.alive(chassis, clock.monotonic(), clock.wall().timestamp())

    def kill_chassis(self, name: str) -> None:
        """The chassis crashes: its daemons die and its links are cut (no BFD, no nb_cfg)."""
        self.ovn.crash(name, self.sim.clock.monotonic())
        self.refresh()

    def revive_chassis(self, name: str) -> None:
        """The chassis returns: it acknowledges nb_cfg again and pre-empts its routers."""
        self.ovn.revive(name, self.sim.clock.wall().timestamp())
        self._wake()

    def sb_outage(self, seconds: float) -> None:
        """The southbound database is out: every gateway agent dead, gateways forward on.
        When it returns Neutron's monitor sees every chassis created again (see
        ``sb_reconnected``)."""
        self.ovn.sb_out_until = self.sim.clock.monotonic() + seconds
        self.sim.schedule(self.ovn.sb_out_until, self.sb_reconnected)

    def sb_reconnected(self) -> None:
        """Neutron's southbound connection is back: with ``ovn_sb_reconnect_demotes`` (what
        Neutron 29 does) the chassis it handles first lands at ``min - 1`` = 0 in every
        group, moving the routers it was primary for; the others fail (-1 is out of range)."""
        if not self.cfg.ovn_sb_reconnect_demotes:
            return
        order = sorted(self.ovn.chassis)
        self.rng.shuffle(order)
        for name in order:
            self.ovn.chassis_created(name)
        now = self.sim.clock.monotonic()
        for gateway in self.ovn.gateways.values():
            self.ovn.rebind(gateway, now, MoveKind.GRACEFUL)
        self.refresh()
