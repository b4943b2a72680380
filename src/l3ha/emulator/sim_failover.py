"""Neutron's ``allow_automatic_l3agent_failover`` periodic check, as neutron 29 runs it.

No I/O, but not pure: it changes the world on the simulation's clock.

Events on the simulation's clock; callers hold ``world.lock``. What neutron does
(neutron/db/agentschedulers_db.py, l3_agentschedulers_db.py, scheduler/l3_agent_scheduler.py)
and how it is modelled:

- The looping call and its clock-jump wait: ``sim_periodic.PeriodicCheck``.
- Down bindings: every binding of an enabled agent whose heartbeat is older than the dead
  limit, in the binding table's key order (router id, agent id). An agent found alive
  again while the pass walks the list is skipped for the rest of the pass.
- ``reschedule_router`` unbinds the router from *every* hosting agent and schedules it
  again in one transaction (LeastRoutersScheduler over live, enabled, mode-compatible
  agents). No candidate: RouterReschedulingFailed, the transaction rolls back and the
  router stays on its dead agent; the pass goes on.
- An HA router with a candidate: ``add_ha_port`` raises RuntimeError inside the
  transaction; only the outer ``except Exception`` catches it, so the whole pass ends
  there (rolled back, nothing moved).
- A successful move notifies the new agent with a blocking RPC call: the pass waits
  ``neutron_move_time``; when the target cannot receive (cut off from the bus), the call
  times out twice (``2 * rpc_response_timeout``), the new binding is removed and the
  router is left unhosted (the unbind was already committed).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from datetime import datetime, timedelta
from enum import StrEnum

from l3ha.emulator.records import AgentRec, RouterRec
from l3ha.emulator.sim_core import SimCore
from l3ha.emulator.sim_periodic import PeriodicCheck

AGENT_NOTIFY_MAX_ATTEMPTS = 2  # neutron/api/rpc/agentnotifiers/l3_rpc_agent_api.py


class Outcome(StrEnum):
    MOVED = "moved"
    FAILED = "failed"  # RouterReschedulingFailed: rolled back, the pass goes on
    TIMED_OUT = "timed-out"  # the RPC call to the new agent failed: router left unhosted
    ABORTED = "aborted"  # an exception that ends the whole pass


class NeutronFailover(PeriodicCheck):
    """The periodic rescheduler; counters say what it did."""

    loop_name = "neutron-failover"
    counter_names = ("passes", "moves", "failed", "timed_out", "aborted", "waits")

    def __init__(self, sim: SimCore) -> None:
        super().__init__(sim)
        self.moves = 0
        self.failed = 0
        self.timed_out = 0
        self.aborted = 0

    def _pass(self, started: float, wall: datetime, limit: float, again: bool) -> None:
        cutoff = wall - timedelta(seconds=limit)
        todo = deque(sorted(self._down_bindings(cutoff)))
        self._walk(started, todo, set(), again)

    def _down_bindings(self, cutoff: datetime) -> Iterable[tuple[str, str]]:
        for agent in self.sim.world.l3_agents():
            if agent.admin_state_up and agent.heartbeat < cutoff:
                for router_id in agent.routers:
                    yield router_id, agent.id

    def _walk(self, started: float, todo: deque[tuple[str, str]], back: set[str],
              again: bool = True) -> None:
        while todo:
            router_id, agent_id = todo.popleft()
            agent = self.sim.world.agents.get(agent_id)
            router = self.sim.world.routers.get(router_id)
            if agent_id in back or agent is None or router is None:
                continue
            if self.sim.is_alive(agent):
                back.add(agent_id)
                continue
            outcome, blocked = self._reschedule(router)
            if outcome is Outcome.ABORTED:
                self.aborted += 1
                break
            if blocked > 0:
                now = self.sim.clock.monotonic()
                self.sim.schedule(now + blocked, self._walk, started, todo, back, again)
                return
        self._finish(started, again)

    # --- reschedule_router -----------------------------------------------------------

    def _reschedule(self, router: RouterRec) -> tuple[Outcome, float]:
        """One router: the outcome and how long the pass blocks on it."""
        target = self._least_routers_target(router)
        if target is None:
            self.failed += 1
            return Outcome.FAILED, 0.0
        if router.ha:
            return Outcome.ABORTED, 0.0
        for replica in list(router.bindings.values()):
            self.sim.unbind(router, replica.agent)
        self.sim.bind(router, target)
        if self.sim.can_report(target):
            self.moves += 1
            return Outcome.MOVED, self.cfg.neutron_move_time
        blocked = AGENT_NOTIFY_MAX_ATTEMPTS * self.cfg.rpc_response_timeout
        self.sim.schedule(self.sim.clock.monotonic() + blocked, self._give_up, router.id,
                          target.id)
        self.timed_out += 1
        return Outcome.TIMED_OUT, blocked

    def _give_up(self, router_id: str, agent_id: str) -> None:
        router = self.sim.world.routers.get(router_id)
        agent = self.sim.world.agents.get(agent_id)
        if router is not None and agent is not None:
            self.sim.unbind(router, agent)

    def _least_routers_target(self, router: RouterRec) -> AgentRec | None:
        """LeastRoutersScheduler over live, enabled, compatible agents, the router unbound."""
        modes = {"dvr_snat"} if router.distributed else {"legacy", "dvr_snat"}
        candidates = [a for a in self.sim.world.l3_agents()
                      if a.mode in modes and a.admin_state_up and self.sim.is_alive(a)]
        if not candidates:
            return None

        def load(agent: AgentRec) -> tuple[int, int]:
            return len(agent.routers) - (1 if router.id in agent.routers else 0), agent.index

        return min(candidates, key=load)
