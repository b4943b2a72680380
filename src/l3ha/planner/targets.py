"""Which agents may take a router, and the best of them under current load. Pure.

Eligible: alive, admin-up, mode legacy or dvr_snat (``dvr`` and
``dvr_no_external`` never; DVR routers only on dvr_snat), in ``--to`` when
given, not excluded (the source, agents already holding a replica), not
avoided by an ``l3ha:avoid`` tag, within capacity. AZ hints filter the eligible
agents when any of them is in a hinted AZ; otherwise the router goes elsewhere
with a warning, or nowhere with ``strict_az``.

Among the candidates the order is: for HA routers an AZ not already holding a
replica; a host named by ``l3ha:prefer``; for busy routers the fewest busy
routers; when placing for recovery (below) the fewest of this plan's routers
beyond the cap; then the least weighted load; the fewest routers; the agent id.

Placing for recovery (``place_for_recovery``, evacuations): an agent wires the
routers it receives one after another, so the last router of a plan answers
again only when the most loaded target's queue is done. Each target takes at
most ``ceil(k / n)`` of the plan's ``k`` routers (``n``: the pool's agents
besides the source) before any takes more; below that cap the balance order
above decides, so the emptiest agent still gets the most, and a later
rebalance evens the final load. Capacity, ``--to``, ``l3ha:avoid`` and AZ
hints filter the candidates first, so they always hold.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from l3ha.model import Agent, AgentMode, Router, Snapshot
from l3ha.planner.load import PlanState
from l3ha.planner.policy import PlacementPolicy, agent_named, avoided_hosts, preferred_hosts


@dataclass(frozen=True, slots=True)
class Choice:
    """The chosen agent (or ``None`` with a reason) and an optional warning."""

    target: str | None
    warning: str = ""
    reason: str = ""


def mode_fits(router: Router, agent: Agent) -> bool:
    """Whether the agent's mode can host the router's centralized part."""
    if router.distributed:
        return agent.mode == AgentMode.DVR_SNAT
    return agent.can_host_centralized


def eligible_pool(agents: Iterable[Agent], policy: PlacementPolicy) -> tuple[Agent, ...]:
    """The agents that may take routers, by id: usable, of a mode that hosts routers, in
    ``--to`` when given."""
    allowed = policy.allowed_targets
    return tuple(
        a
        for a in sorted(agents, key=lambda a: a.id)
        if a.usable and a.can_host_centralized and (allowed is None or a.id in allowed)
    )


class Targets:
    """Chooses targets for routers against one ``PlanState``."""

    def __init__(self, snapshot: Snapshot, policy: PlacementPolicy, state: PlanState) -> None:
        self.policy = policy
        self.state = state
        self.agents = tuple(sorted(snapshot.agents, key=lambda a: a.id))
        self.by_id = {a.id: a for a in self.agents}
        self.pool = eligible_pool(self.agents, policy)
        self.snat_pool = tuple(a for a in self.pool if a.mode == AgentMode.DVR_SNAT)
        self.limited = (
            policy.max_routers_per_agent is not None or policy.max_weight_per_agent is not None
        )
        self._least: _LeastLoaded | None = None
        self.queue_cap: int | None = None
        self.received: Counter[str] = Counter()  # this plan's placements per agent

    def place_for_recovery(self, routers: int, source: str) -> None:
        """Spread the next ``routers`` placements over the pool (see the module docstring)."""
        others = sum(1 for a in self.pool if a.id != source)
        self.queue_cap = max(1, -(-routers // max(1, others)))

    def choose(self, router: Router, exclude: Collection[str] = ()) -> Choice:
        """The best target for one more binding of ``router``, or why there is none."""
        holders = set(self.state.agents_of(router.id))
        barred = holders | set(exclude)
        if self._plain(router):
            return self._choose_plain(router, barred)
        eligible = self._eligible(router, barred)
        if not eligible:
            return Choice(None, reason=self._why_none(router, barred))
        candidates, warning = self._apply_az_hints(router, eligible)
        if not candidates:
            hints = ",".join(router.availability_zone_hints)
            return Choice(None, reason=f"strict AZ: no eligible agent in AZ(s) {hints}")
        best = min(candidates, key=self._ranker(router, holders, set(exclude)))
        if warning:
            warning += f"; placed on {best.host} ({best.id}) in AZ {best.availability_zone}"
        self.received[best.id] += 1
        return Choice(best.id, warning=warning)

    def _plain(self, router: Router) -> bool:
        """No constraint but load applies: the heaps give the same answer as the ranking."""
        if self.limited or router.ha or router.distributed or router.availability_zone_hints:
            return False
        return not (router.tags and (preferred_hosts(router) or avoided_hosts(router)))

    def _choose_plain(self, router: Router, barred: set[str]) -> Choice:
        if self._least is None:
            self._least = _LeastLoaded(self.pool, self.state, self._over_cap)
        best = self._least.best(self.state.cost(router)[1], barred)
        if best is None:
            return Choice(None, reason=self._why_none(router, barred))
        self.received[best] += 1
        return Choice(best)

    def _over_cap(self, agent_id: str) -> int:
        """How far past the recovery cap this plan's placements on the agent are (0: room)."""
        cap = self.queue_cap
        return 0 if cap is None else max(0, self.received[agent_id] - cap + 1)

    def _eligible(self, router: Router, barred: set[str]) -> list[Agent]:
        pool = self.snat_pool if router.distributed else self.pool
        eligible = [a for a in pool if a.id not in barred]
        avoid = avoided_hosts(router) if router.tags else ()
        if avoid:
            eligible = [a for a in eligible if not agent_named(a, avoid)]
        if self.limited:
            state, policy = self.state, self.policy
            eligible = [a for a in eligible if state.fits(router, a.id, policy)]
        return eligible

    def _apply_az_hints(self, router: Router, eligible: list[Agent]) -> tuple[list[Agent], str]:
        hints = router.availability_zone_hints
        if not hints:
            return eligible, ""
        in_az = [a for a in eligible if a.availability_zone in hints]
        if in_az:
            return in_az, ""
        if self.policy.strict_az:
            return [], ""
        return eligible, f"router {router.id}: no eligible agent in hinted AZ(s) {','.join(hints)}"

    def _ranker(
        self, router: Router, holders: set[str], exclude: set[str]
    ) -> Callable[[Agent], tuple[bool, bool, int, int, int, int, str]]:
        state, over_cap = self.state, self._over_cap
        count, weight, busy_count = state.count, state.weight, state.busy
        _, busy = state.cost(router)
        replica_azs = {
            self.by_id[h].availability_zone
            for h in holders - exclude
            if h in self.by_id and self.by_id[h].usable
        }
        prefer = preferred_hosts(router) if router.tags else ()

        def rank(agent: Agent) -> tuple[bool, bool, int, int, int, int, str]:
            agent_id = agent.id
            return (
                bool(replica_azs) and agent.availability_zone in replica_azs,
                not (prefer and agent_named(agent, prefer)),
                busy_count[agent_id] if busy else 0,
                over_cap(agent_id),
                weight[agent_id],
                count[agent_id],
                agent_id,
            )

        return rank

    def _why_none(self, router: Router, barred: set[str]) -> str:
        allowed = self.policy.allowed_targets
        avoid = avoided_hosts(router)
        counts = {"down": 0, "mode": 0, "to": 0, "barred": 0, "avoid": 0, "full": 0}
        for agent in self.agents:
            if not agent.usable:
                counts["down"] += 1
            elif not mode_fits(router, agent):
                counts["mode"] += 1
            elif allowed is not None and agent.id not in allowed:
                counts["to"] += 1
            elif agent.id in barred:
                counts["barred"] += 1
            elif avoid and agent_named(agent, avoid):
                counts["avoid"] += 1
            else:
                counts["full"] += 1
        labels = {
            "down": "dead or disabled",
            "mode": "of an incompatible mode",
            "to": "outside --to",
            "barred": "source or already hosting it",
            "avoid": "avoided by tag",
            "full": "at capacity",
        }
        parts = [f"{n} {labels[k]}" for k, n in counts.items() if n]
        return f"no eligible agent ({'; '.join(parts) or 'no L3 agents'})"


class _LeastLoaded:
    """Lazy heaps of pool agents by (busy,) past the recovery cap, weighted load, count, id.

    An entry is current when it equals the agent's key now; agents whose load
    changed (``PlanState.changed``) get fresh entries before each look-up.
    """

    def __init__(
        self, pool: tuple[Agent, ...], state: PlanState, over_cap: Callable[[str], int]
    ) -> None:
        self.state = state
        self.over_cap = over_cap  # changes only with a placement on the agent: in ``changed``
        self.in_pool = {a.id for a in pool}
        self.busy_heap = [self._key(True, a.id) for a in pool]
        self.quiet_heap = [self._key(False, a.id) for a in pool]
        heapq.heapify(self.busy_heap)
        heapq.heapify(self.quiet_heap)
        state.changed.clear()

    def _key(self, busy: bool, agent_id: str) -> tuple[int | str, ...]:
        state = self.state
        load = (self.over_cap(agent_id), state.weight[agent_id], state.count[agent_id], agent_id)
        return (state.busy[agent_id], *load) if busy else load

    def best(self, busy: bool, barred: set[str]) -> str | None:
        """The least loaded pool agent not in ``barred`` (ranked as ``Targets`` does)."""
        for agent_id in dict.fromkeys(self.state.changed):
            if agent_id in self.in_pool:
                heapq.heappush(self.busy_heap, self._key(True, agent_id))
                heapq.heappush(self.quiet_heap, self._key(False, agent_id))
        self.state.changed.clear()
        heap = self.busy_heap if busy else self.quiet_heap
        skipped: list[tuple[int | str, ...]] = []
        found: str | None = None
        while heap:
            entry = heap[0]
            agent_id = str(entry[-1])
            if entry != self._key(busy, agent_id):
                heapq.heappop(heap)  # stale
            elif agent_id in barred:
                skipped.append(heapq.heappop(heap))
            else:
                found = agent_id
                break
        for entry in skipped:
            heapq.heappush(heap, entry)
        return found
