"""Local search that evens out busy counts, router counts and weighted load. Pure.

The state is every live, enabled, eligible agent (the pool) with its router
count C, busy count B and weighted load W, and every movable router (legacy
routers and DVR snat bindings on pool agents; HA replicas count as load but
stay put). A move of router r (weight w) from d to j is *improving* when it
lowers the potential (sum B^2, sum C^2, sum W^2) lexicographically:

1. busy phase: r busy and B[d] - B[j] >= 2;
2. count phase: C[d] - C[j] >= 2 and r quiet (or busy with B[d] - B[j] >= 1);
3. weight phase: C[d] - C[j] == 1, r quiet (or busy with B[d] - B[j] >= 1)
   and W[d] - W[j] > w.

Routers fall into classes by the agents their constraints allow (mode, AZ
hints, avoid tags); class ``None`` allows every agent. For each class, heaps
give the most loaded donor holding such a router and the least loaded agent
allowed to receive it, so a move costs O(K log n) for K classes. When
capacities block the best pairs an exhaustive search looks for any other
improving move. The search stops when no improving move exists, so running it
again on the result finds nothing, and every move of a capped run lowers the
potential.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple


class Phase(StrEnum):
    """Which part of the potential a move lowered."""

    BUSY = "spread busy routers"
    COUNT = "even router counts"
    WEIGHT = "even weighted load"


class Found(NamedTuple):
    """An improving move: router, its class and list, its position there, target."""

    router: int
    klass: int
    busy_list: bool
    position: int
    target: int


UNLIMITED = 1 << 62


@dataclass(frozen=True)
class Limits:
    """Per-agent capacities (``UNLIMITED`` when there is none)."""

    count: int = UNLIMITED
    weight: int = UNLIMITED


KeyFn = Callable[[int], tuple[int, ...]]
Lists = list[dict[int, list[int]]]  # per agent: class -> routers (the last leaves first)
_Heap = list[tuple[int, ...]]


class Balancer:
    """Mutable balancing state over agent indices 0..n-1 and router indices."""

    def __init__(
        self,
        loads: tuple[list[int], list[int], list[int]],
        router_weight: list[int],
        router_agent: list[int],
        classes: list[frozenset[int] | None],
        limits: Limits,
    ) -> None:
        self.C, self.B, self.W = loads
        self.rw = router_weight
        self.cur = router_agent
        self.classes = classes
        self.limits = limits
        n = len(self.C)
        self.router_class = [0] * len(router_weight)
        self.busy_lists: Lists = [{} for _ in range(n)]
        self.quiet_lists: Lists = [{} for _ in range(n)]
        self.version = [0] * n
        self.first_phase: dict[int, Phase] = {}
        self.members = [sorted(range(n)) if c is None else sorted(c) for c in classes]
        # constrained classes move first: flexible routers are kept to fill the gaps
        self.class_rank = [len(m) for m in self.members]
        self.receives = [
            [k for k, c in enumerate(classes) if c is None or i in c] for i in range(n)
        ]

    def add_router(self, router: int, klass: int, busy: bool) -> None:
        """Register a movable router (call in leaving order: the last one leaves first)."""
        self.router_class[router] = klass
        lists = self.busy_lists if busy else self.quiet_lists
        lists[self.cur[router]].setdefault(klass, []).append(router)

    def eligible(self, r: int, j: int) -> bool:
        """Whether router r may move to agent j now."""
        allowed = self.classes[self.router_class[r]]
        return (
            j != self.cur[r]
            and self.C[j] < self.limits.count
            and self.W[j] + self.rw[r] <= self.limits.weight
            and (allowed is None or j in allowed)
        )

    # --- running ------------------------------------------------------------

    def run(self, budget: int | None) -> int:
        """Improve until no improving move exists or ``budget`` moves were made."""
        made = 0
        while True:
            round_moves = 0
            for phase in Phase:
                left = None if budget is None else budget - made
                if left == 0:
                    return made
                count = self._run_phase(phase, left)
                made += count
                round_moves += count
            if round_moves == 0:
                return made

    def _run_phase(self, phase: Phase, budget: int | None) -> int:
        made = 0
        fast = None if phase == Phase.WEIGHT else _FastPath(self, phase)
        while budget is None or made < budget:
            found = fast.next_move() if fast is not None else _SLOW
            if found is _SLOW:
                found = self._slow(phase)
            if not isinstance(found, Found):
                break
            touched = (self.cur[found.router], found.target)
            self._apply(found, phase)
            if fast is not None:
                fast.update(touched)
            made += 1
        return made

    def _apply(self, found: Found, phase: Phase) -> None:
        r, j, k = found.router, found.target, found.klass
        d = self.cur[r]
        lists = self.busy_lists if found.busy_list else self.quiet_lists
        del lists[d][k][found.position]
        lists[j].setdefault(k, []).insert(0, r)
        w = self.rw[r]
        self.C[d] -= 1
        self.C[j] += 1
        self.W[d] -= w
        self.W[j] += w
        if found.busy_list:
            self.B[d] -= 1
            self.B[j] += 1
        self.cur[r] = j
        self.version[d] += 1
        self.version[j] += 1
        self.first_phase.setdefault(r, phase)

    # --- per-class heaps (fast path) ----------------------------------------

    def keys(self, phase: Phase) -> tuple[KeyFn, KeyFn]:
        """Heap keys: donors most loaded first, receivers least loaded first."""
        busy, count, load, version = self.B, self.C, self.W, self.version
        if phase == Phase.BUSY:
            return (
                lambda i: (-busy[i], -count[i], -load[i], i, version[i]),
                lambda i: (busy[i], count[i], load[i], i, version[i]),
            )
        return (
            lambda i: (-count[i], -load[i], i, version[i]),
            lambda i: (count[i], load[i], i, version[i]),
        )

    # --- exhaustive search (constraints block the best pairs) ---------------

    def pair_improves(self, phase: Phase, d: int, j: int) -> bool:
        if phase == Phase.BUSY:
            return self.B[d] - self.B[j] >= 2
        if phase == Phase.COUNT:
            return self.C[d] - self.C[j] >= 2
        return self.C[d] - self.C[j] == 1 and self.W[d] - self.W[j] > 1

    def _slow(self, phase: Phase) -> Found | None:
        """Any improving move (class by class), preferring the widest gap."""
        n = len(self.C)
        dkey, rkey = self.keys(phase)
        if phase == Phase.WEIGHT:
            dkey = lambda i: (-self.W[i], i)  # noqa: E731
            rkey = lambda i: (self.W[i], i)  # noqa: E731
        by_donor = sorted(range(n), key=dkey)
        by_receiver = sorted(range(n), key=rkey)
        metric = self.B if phase == Phase.BUSY else self.C if phase == Phase.COUNT else self.W
        best: tuple[int, int, int, Found] | None = None
        for k, allowed in enumerate(self.classes):
            donors = [
                d for d in by_donor if self.busy_lists[d].get(k) or self.quiet_lists[d].get(k)
            ]
            if not donors:
                continue
            receivers = by_receiver if allowed is None else [j for j in by_receiver if j in allowed]
            found = self._first_in_class(phase, k, donors, receivers)
            if found is not None:
                d = self.cur[found.router]
                candidate = (metric[found.target] - metric[d], self.class_rank[k], k, found)
                if best is None or candidate[:3] < best[:3]:
                    best = candidate
        return best[3] if best is not None else None

    def _first_in_class(
        self, phase: Phase, k: int, donors: list[int], receivers: list[int]
    ) -> Found | None:
        if phase == Phase.WEIGHT:
            by_level: dict[int, list[int]] = {}
            for j in receivers:  # sorted by weighted load
                by_level.setdefault(self.C[j], []).append(j)
        for d in donors:
            if phase == Phase.WEIGHT:
                receivers = by_level.get(self.C[d] - 1, [])
            for j in receivers:
                if not self.pair_improves(phase, d, j):
                    break
                found = self.pick(phase, d, j, only_class=k)
                if found is not None:
                    return found
        return None

    def _groups(self, d: int, busy: bool, only_class: int | None) -> list[tuple[int, list[int]]]:
        lists = (self.busy_lists if busy else self.quiet_lists)[d]
        if only_class is not None:
            return [(only_class, lists.get(only_class, []))]
        return [(k, lists[k]) for k in sorted(lists)]

    def pick(self, phase: Phase, d: int, j: int, only_class: int | None = None) -> Found | None:
        """The router of donor d to move to j in this phase, or None."""
        busy_fits = self.B[d] - self.B[j] >= 1
        if phase == Phase.WEIGHT:
            return self._pick_weight(d, j, busy_fits, only_class)
        order = [True] if phase == Phase.BUSY else [False] + ([True] if busy_fits else [])
        for busy in order:
            for k, routers in self._groups(d, busy, only_class):
                for pos in range(len(routers) - 1, -1, -1):
                    if self.eligible(routers[pos], j):
                        return Found(routers[pos], k, busy, pos, j)
        return None

    def _pick_weight(self, d: int, j: int, busy_fits: bool, only_class: int | None) -> Found | None:
        """The router whose move evens W[d] and W[j] most (weight closest to half the gap)."""
        gap = self.W[d] - self.W[j]
        best: tuple[int, int, Found] | None = None
        for busy in [False] + ([True] if busy_fits else []):
            for k, routers in self._groups(d, busy, only_class):
                for pos, r in enumerate(routers):
                    w = self.rw[r]
                    if w < gap and self.eligible(r, j):
                        score = (w * (w - gap), r)
                        if best is None or score < best[:2]:
                            best = (score[0], score[1], Found(r, k, busy, pos, j))
        return best[2] if best is not None else None


_SLOW = "slow"


class _FastPath:
    """Per-class heaps for one busy or count phase (lazy entries, keyed with versions)."""

    def __init__(self, bal: Balancer, phase: Phase) -> None:
        self.bal, self.phase = bal, phase
        self.dkey, self.rkey = bal.keys(phase)
        # fast-path donors: busy routers in the busy phase, quiet ones in the count phase
        self.lists = bal.busy_lists if phase == Phase.BUSY else bal.quiet_lists
        self.metric = bal.B if phase == Phase.BUSY else bal.C
        self.donor_tests = [self._donor_test(k) for k in range(len(bal.classes))]
        limit = bal.limits.count
        count = bal.C
        self.has_room: Callable[[int], bool] = lambda i: count[i] < limit
        self.heaps: list[tuple[_Heap, _Heap]] = []
        agents = range(len(bal.C))
        for k, members in enumerate(bal.members):
            donors = [self.dkey(i) for i in agents if self.lists[i].get(k)]
            receivers = [self.rkey(i) for i in members]
            heapq.heapify(donors)
            heapq.heapify(receivers)
            self.heaps.append((donors, receivers))
        # the fast path skips busy routers in the count phase, and weight limits depend
        # on the router: then only the exhaustive search can say "no improving move"
        self.exhaustive = phase == Phase.BUSY and bal.limits.weight >= UNLIMITED

    def _donor_test(self, k: int) -> Callable[[int], bool]:
        lists = self.lists
        return lambda i: bool(lists[i].get(k))

    def next_move(self) -> Found | str | None:
        """The move of the best pair over all classes; None when no pair improves."""
        bal, metric, version = self.bal, self.metric, self.bal.version
        # (-gap, class rank, donor, receiver, class): widest gap, tightest class first
        best: tuple[int, int, int, int, int] | None = None
        for k, (donors, receivers) in enumerate(self.heaps):
            d = _valid_top(donors, version, self.donor_tests[k])
            j = _valid_top(receivers, version, self.has_room)
            if d < 0 or j < 0 or not bal.pair_improves(self.phase, d, j):
                continue
            candidate = (metric[j] - metric[d], bal.class_rank[k], d, j, k)
            if best is None or candidate < best:
                best = candidate
        if best is None:
            return None if self.exhaustive else _SLOW
        _, _, d, j, k = best
        found = bal.pick(self.phase, d, j, only_class=k)
        return found if found is not None else _SLOW

    def update(self, agents: tuple[int, int]) -> None:
        """Push fresh entries for the agents a move touched."""
        for agent in agents:
            donor_entry = self.dkey(agent)
            for k, routers in self.lists[agent].items():
                if routers:
                    heapq.heappush(self.heaps[k][0], donor_entry)
            receiver_entry = self.rkey(agent)
            for k in self.bal.receives[agent]:
                heapq.heappush(self.heaps[k][1], receiver_entry)


def _valid_top(heap: _Heap, version: list[int], usable: Callable[[int], bool]) -> int:
    """The agent of the first current, usable entry (others are dropped), or -1."""
    while heap:
        entry = heap[0]
        agent = entry[-2]
        if entry[-1] == version[agent] and usable(agent):
            return agent
        heapq.heappop(heap)
    return -1
