"""HA routers in the simulation: VRRP elections, split brain, and the agents' HA state
reports to the server. No I/O, but not pure: it changes the world on the simulation's clock.

An HA router's copies elect a master when none of them is master and at least
one is processed on an agent whose VRRP is alive; the election happens
``ha_takeover_time`` later (keepalived's master-down interval). A transition to
primary reaches the server ``ha_vrrp_advert_int`` after it happened, through a
notifier that sends one batch per interval per agent (neutron/agent/l3/ha.py),
and only while the agent can report; a transition back to backup before the
wait ends is never reported.
"""

from __future__ import annotations

from l3ha.emulator import sim_ports
from l3ha.emulator.records import Replica, RouterRec
from l3ha.emulator.sim_core import SimCore


class VrrpModel:
    """VRRP and HA state reports of the simulation's HA routers."""

    def __init__(self, sim: SimCore) -> None:
        self.sim = sim

    def eligible(self, router: RouterRec) -> list[Replica]:
        """Copies that may become master: processed, on an agent whose VRRP is alive."""
        return [r for r in self.sim.copies(router) if r.processed and self.sim.vrrp_alive(r.agent)]

    def check(self, router: RouterRec) -> None:
        """Demote masters that can no longer be; schedule an election when none is left."""
        for replica in self.sim.copies(router):
            if replica.vrrp == "master" and not (replica.processed
                                                 and self.sim.vrrp_alive(replica.agent)):
                replica.vrrp = "backup"
        has_master = any(r.vrrp == "master" for r in self.sim.copies(router))
        if not has_master and router.election_due is None and self.eligible(router):
            router.election_due = self.sim.clock.monotonic() + self.sim.cfg.ha_takeover_time
            self.sim.schedule(router.election_due, self._elect, router.id)

    def _elect(self, router_id: str) -> None:
        router = self.sim.world.routers.get(router_id)
        if router is None:
            return
        router.election_due = None
        eligible = self.eligible(router)
        if eligible and not any(r.vrrp == "master" for r in eligible):
            eligible[0].vrrp = "master"
        self.sim.refresh(router)

    def split_brain(self, router: RouterRec, seconds: float) -> int:
        """Make every eligible replica master for ``seconds``; return how many. The fault
        puts them in the server's view at once (no report delay), so it shows at once."""
        eligible = self.eligible(router)
        for replica in eligible:
            replica.vrrp = "master"
            if replica.agent.id in router.bindings and self.sim.can_report(replica.agent):
                replica.reported, replica.pending = "active", None
        router.split_brain_until = self.sim.clock.monotonic() + seconds
        self.sim.schedule(router.split_brain_until, self._heal_split_brain, router.id)
        self.sim.refresh(router)
        return len(eligible)

    def _heal_split_brain(self, router_id: str) -> None:
        router = self.sim.world.routers.get(router_id)
        if router is None or self.sim.clock.monotonic() < router.split_brain_until:
            return
        masters = [r for r in self.sim.copies(router) if r.vrrp == "master"]
        for replica in masters[1:]:
            replica.vrrp = "backup"
        self.sim.refresh(router)

    # --- state reports (keepalived-state-change -> BatchNotifier -> server) ----------

    def sync_reported(self, router: RouterRec) -> None:
        """Start reporting every binding's VRRP state the server does not have yet."""
        if not router.ha:
            return
        for replica in router.bindings.values():
            self._report_transition(router, replica)

    def _report_transition(self, router: RouterRec, replica: Replica) -> None:
        """Start reporting the replica's VRRP state if the server has another one."""
        state = "active" if replica.vrrp == "master" else "standby"
        if state in (replica.reported, replica.pending) or not self.sim.can_report(replica.agent):
            return
        replica.pending = state
        delay = self.sim.cfg.ha_vrrp_advert_int if state == "active" else 0.0
        self.sim.schedule(self.sim.clock.monotonic() + delay, self._queue_report, router.id,
                      replica.agent.id, state)

    def _queue_report(self, router_id: str, agent_id: str, state: str) -> None:
        """The transition survived the wait: queue it on the agent's batch notifier."""
        router = self.sim.world.routers.get(router_id)
        replica = router.bindings.get(agent_id) if router else None
        if router is None or replica is None or replica.pending != state:
            return
        if state != ("active" if replica.vrrp == "master" else "standby"):
            replica.pending = None  # primary -> backup again: never reported
            self._report_transition(router, replica)
            return
        agent, now = replica.agent, self.sim.clock.monotonic()
        send = max(now, agent.notify_busy_until)
        agent.notify_busy_until = send + self.sim.cfg.ha_vrrp_advert_int
        self.sim.schedule(send, self._deliver_report, router_id, agent_id, state)

    def _deliver_report(self, router_id: str, agent_id: str, state: str) -> None:
        router = self.sim.world.routers.get(router_id)
        replica = router.bindings.get(agent_id) if router else None
        if router is None or replica is None or replica.pending != state:
            return
        replica.pending = None
        if not self.sim.can_report(replica.agent):
            return  # lost; the resync on reconnection reports again
        replica.reported = state
        if state == "active":
            sim_ports.reported_active(router, replica)
        self._report_transition(router, replica)
