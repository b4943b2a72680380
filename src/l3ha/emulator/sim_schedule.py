"""Neutron's router scheduling outside the scheduler API: agent resyncs and router updates.

No I/O, but not pure: it changes the world on the simulation's clock.

Runs on the simulation; callers hold ``world.lock``. What neutron 29 does and how it is
modelled:

- ``router_auto_schedule`` (on by default, neutron/conf/db/l3_agentschedulers_db.py): an L3
  agent's full resync asks ``get_router_ids`` (api/rpc/handlers/l3_rpc.py), which first runs
  ``auto_schedule_routers`` for that agent's host (scheduler/l3_agent_scheduler.py). It acts
  only for an *enabled* agent (liveness is not checked) and only on under-scheduled routers:
  a non-HA router with no binding at all (a router bound to a dead or disabled agent counts
  as hosted), an HA router with fewer bindings than ``min(max_l3_agents_per_router, live
  enabled legacy/dvr_snat agents)`` (bindings to dead agents count). Each is bound to *this*
  agent when it can host it (``get_l3_agent_candidates``: not a ``dvr`` or
  ``dvr_no_external`` agent, no distributed router on a ``legacy`` agent) and, for HA, does
  not host it yet — one replica per resync. The default LeastRoutersScheduler ignores
  availability-zone hints. The bindings are returned to the agent with the router ids, not
  sent by RPC: the work joins the agent's resync queue.
- A router update (``PUT /v2.0/routers/{id}``; also a create with a gateway) notifies the
  agents and schedules the router first (db/l3_db.py ``update_router`` ->
  ``notify_router_updated`` -> ``schedule_routers``), with no switch: an unhosted router goes
  to the live, enabled, compatible agent with the fewest routers (HA: that many agents, up
  to ``max_l3_agents_per_router``). Only routers with no binding are modelled here.
"""

from __future__ import annotations

from collections.abc import Callable

from l3ha.emulator.records import AgentRec, RouterRec
from l3ha.emulator.sim_core import SimCore

#: Agent modes neutron schedules no router to (compute-node agents).
UNSCHEDULABLE_MODES = frozenset({"dvr", "dvr_no_external"})


def can_host(agent: AgentRec, router: RouterRec) -> bool:
    """``get_l3_agent_candidates`` for one agent, admin state aside."""
    if not agent.is_l3 or agent.mode in UNSCHEDULABLE_MODES:
        return False
    return not (router.distributed and agent.mode == "legacy")


class RouterScheduler:
    """Auto-scheduling on resync and scheduling on update; ``bound`` counts its bindings."""

    def __init__(self, sim: SimCore) -> None:
        self.sim = sim
        self.cfg = sim.cfg
        self.bound = 0
        self.resyncs = 0

    def ha_target(self) -> int:
        """``get_number_of_agents_for_scheduling``: live enabled legacy/dvr_snat agents, capped."""
        live = sum(1 for a in self.sim.world.l3_agents()
                   if a.mode in ("legacy", "dvr_snat") and a.admin_state_up
                   and self.sim.is_alive(a))
        return min(self.cfg.max_l3_agents_per_router, live)

    def full_resync(self, agent: AgentRec) -> list[RouterRec]:
        """``get_router_ids`` from ``agent``: bind the under-scheduled routers it can host."""
        if not (self.cfg.router_auto_schedule and agent.is_l3 and agent.admin_state_up):
            return []
        self.resyncs += 1
        target = self.ha_target()
        chosen = [r for r in self.sim.world.routers_by_id()
                  if self._underscheduled(r, target) and agent.id not in r.bindings
                  and can_host(agent, r)]
        for router in chosen:
            self.sim.bind(router, agent, notify=False)
        self.bound += len(chosen)
        return chosen

    @staticmethod
    def _underscheduled(router: RouterRec, ha_target: int) -> bool:
        if router.ha:
            return len(router.bindings) < ha_target
        return not router.bindings

    def router_updated(self, router: RouterRec) -> list[AgentRec]:
        """``schedule_routers`` on an update: an unhosted router goes to the least loaded."""
        if router.bindings:
            return []
        candidates = self.least_loaded(lambda a: can_host(a, router))
        chosen = candidates[:self.cfg.max_l3_agents_per_router] if router.ha else candidates[:1]
        for agent in chosen:
            self.sim.bind(router, agent)
        self.bound += len(chosen)
        return chosen

    def least_loaded(self, fits: Callable[[AgentRec], bool]) -> list[AgentRec]:
        """The live, enabled L3 agents ``fits`` accepts, the fewest routers first."""
        now = self.sim.clock.wall()
        candidates = [a for a in self.sim.world.l3_agents()
                      if fits(a) and a.admin_state_up and self.sim.is_alive(a, now)]
        return sorted(candidates, key=lambda a: (len(a.routers), a.index))
