"""Per-agent load while a plan is being built: counts, busy counts, weights. Pure.

``PlanState`` starts from a snapshot's bindings and is updated by every
placement the planner makes, so each choice counts what was already placed in
the same plan (no pile-up on the emptiest agent). Every binding counts on its
agent: HA replicas and DVR snat bindings included.
"""

from __future__ import annotations

from l3ha.model import Router, Snapshot
from l3ha.planner.policy import PlacementPolicy
from l3ha.weights import WeightPolicy


class PlanState:
    """Mutable load and router->agents bookkeeping for one planning run."""

    def __init__(self, snapshot: Snapshot, weights: WeightPolicy) -> None:
        self.weights = weights
        self.count: dict[str, int] = {a.id: 0 for a in snapshot.agents}
        self.busy: dict[str, int] = {a.id: 0 for a in snapshot.agents}
        self.weight: dict[str, int] = {a.id: 0 for a in snapshot.agents}
        self._holders: dict[str, list[str]] = {}
        self._single: dict[str, str] = {}  # router -> its only agent (cheaper than lists)
        self.changed: list[str] = []  # agents whose load changed, for listeners to drain
        self._costs: dict[str, tuple[int, bool]] = {}
        self._plain_cost = (1, weights.busy_threshold <= 1)
        routers = snapshot.routers_by_id
        count, busy, weight = self.count, self.busy, self.weight
        for binding in snapshot.bindings:
            router = routers.get(binding.router_id)
            agent_id = binding.agent_id
            if router is None or agent_id not in count:
                continue
            w, is_busy = self.cost(router)
            count[agent_id] += 1
            weight[agent_id] += w
            busy[agent_id] += is_busy
            self._note_holder(router.id, agent_id)

    def _note_holder(self, router_id: str, agent_id: str) -> None:
        if router_id in self._holders:
            self._holders[router_id].append(agent_id)
        elif router_id in self._single:
            self._holders[router_id] = [self._single.pop(router_id), agent_id]
        else:
            self._single[router_id] = agent_id

    def cost(self, router: Router) -> tuple[int, bool]:
        """(weight, busy) of a router, computed once per run."""
        if self.weights.is_plain(router):
            return self._plain_cost  # what WeightPolicy.weight gives such a router
        cached = self._costs.get(router.id)
        if cached is None:
            weight = self.weights.weight(router)
            cached = (weight, weight >= self.weights.busy_threshold)
            self._costs[router.id] = cached
        return cached

    def busy_first(self, router: Router) -> tuple[bool, int, str]:
        """The order routers are placed in: busy ones first, heaviest first, then by id."""
        weight, busy = self.cost(router)
        return (not busy, -weight, router.id)

    def _holders_of(self, router_id: str) -> list[str]:
        holders = self._holders.get(router_id)
        if holders is None:
            single = self._single.pop(router_id, None)
            holders = [] if single is None else [single]
            self._holders[router_id] = holders
        return holders

    def add(self, router: Router, agent_id: str) -> None:
        """Count a binding of ``router`` on ``agent_id``."""
        self._change(router, agent_id, 1)
        self._holders_of(router.id).append(agent_id)

    def remove(self, router: Router, agent_id: str) -> None:
        """Forget a binding of ``router`` on ``agent_id``."""
        self._change(router, agent_id, -1)
        self._holders_of(router.id).remove(agent_id)

    def _change(self, router: Router, agent_id: str, sign: int) -> None:
        weight, busy = self.cost(router)
        self.count[agent_id] += sign
        self.weight[agent_id] += sign * weight
        self.busy[agent_id] += sign * int(busy)
        self.changed.append(agent_id)

    def move(self, router: Router, source: str, target: str) -> None:
        """Count a move of one binding from ``source`` to ``target``."""
        self.remove(router, source)
        self.add(router, target)

    def agents_of(self, router_id: str) -> tuple[str, ...]:
        """Agents currently (in this plan) bound to the router."""
        return tuple(self._holders_of(router_id))

    def fits(self, router: Router, agent_id: str, policy: PlacementPolicy) -> bool:
        """Whether one more binding of ``router`` stays within the agent's capacity."""
        limit = policy.max_routers_per_agent
        if limit is not None and self.count[agent_id] + 1 > limit:
            return False
        wlimit = policy.max_weight_per_agent
        return wlimit is None or self.weight[agent_id] + self.cost(router)[0] <= wlimit
