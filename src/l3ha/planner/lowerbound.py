"""The fewest moves that can balance router and busy counts across agents. Pure.

A balanced end state gives every agent ``bf`` or ``bf+1`` busy routers
(exactly ``B mod n`` of them ``bf+1``) and ``tf`` or ``tf+1`` routers
(exactly ``N mod n`` of them ``tf+1``). Agent *i* must then lose at least its
excess busy routers and its excess quiet routers, and moving exactly those is
always possible, so the minimum over the choice of which agents get the
``+1``s is the exact lower bound. That choice is made optimally in O(n)
(``joint_bound``); ``count_bound`` is the classic bound for counts alone.
"""

from __future__ import annotations

from collections.abc import Sequence


def count_bound(values: Sequence[int]) -> int:
    """Fewest moves to make ``values`` differ by at most 1 (the remainder to the largest)."""
    n = len(values)
    if n == 0:
        return 0
    floor, remainder = divmod(sum(values), n)
    ordered = sorted(values, reverse=True)
    high = sum(max(0, v - floor - 1) for v in ordered[:remainder])
    return high + sum(max(0, v - floor) for v in ordered[remainder:])


def balance_bound(busy: Sequence[int], total: Sequence[int]) -> int:
    """Fewest moves after which busy counts and router counts each differ by at most 1."""
    simple = max(count_bound(total), count_bound(busy))
    n = len(total)
    if n == 0:
        return 0
    busy_floor, busy_rem = divmod(sum(busy), n)
    total_floor, total_rem = divmod(sum(total), n)
    gap = total_floor - busy_floor
    if gap < 1:  # fewer quiet routers than agents: the simple bound is still valid
        return simple
    quiet = [t - b for t, b in zip(total, busy, strict=True)]
    exact = joint_bound(
        busy, quiet, busy_floor=busy_floor, busy_rem=busy_rem, gap=gap, total_rem=total_rem
    )
    return max(exact, simple)


def joint_bound(
    busy: Sequence[int],
    quiet: Sequence[int],
    *,
    busy_floor: int,
    busy_rem: int,
    gap: int,
    total_rem: int,
) -> int:
    """Exact bound when ``gap = total_floor - busy_floor >= 1`` (see module docstring).

    With ``bh``/``th`` marking the agents that get the extra busy/total slot, an
    agent's quiet target is ``gap + th - bh``. Given ``bh``, the best ``th``
    saves ``min(total_rem, K)`` where K counts agents with quiet excess left;
    giving ``bh`` to an agent changes its busy excess by -1 (if above floor),
    its quiet excess by +1 (if quiet >= gap) and K by +1 (if quiet == gap).
    The categories below are taken greedily in order of that value.
    """
    base = sum(max(0, b - busy_floor) for b in busy) + sum(max(0, q - gap) for q in quiet)
    cats = {k: 0 for k in ("A", "B", "C", "D", "E", "F")}
    for b, q in zip(busy, quiet, strict=True):
        above = b > busy_floor
        if q < gap:
            cats["A" if above else "D"] += 1
        elif q == gap:
            cats["C" if above else "E"] += 1
        else:
            cats["B" if above else "F"] += 1
    k0 = sum(1 for q in quiet if q > gap)
    slack = max(0, total_rem - k0)
    c_first = min(cats["C"], slack)
    e_first = min(cats["E"], slack - c_first)
    order = [
        ("A", cats["A"]),
        ("C", c_first),
        ("B", cats["B"]),
        ("D", cats["D"]),
        ("C", cats["C"] - c_first),
        ("E", e_first),
        ("E", cats["E"] - e_first),
        ("F", cats["F"]),
    ]
    chosen = dict.fromkeys(cats, 0)
    left = busy_rem
    for cat, available in order:
        take = min(left, available)
        chosen[cat] += take
        left -= take
    delta = -chosen["A"] + chosen["E"] + chosen["F"]
    saved = min(total_rem, k0 + chosen["C"] + chosen["E"])
    return base + delta - saved
