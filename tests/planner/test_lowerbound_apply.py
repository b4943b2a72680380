"""The move lower bound (checked against brute force) and apply_plan."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from l3ha.errors import BadInputError
from l3ha.model import Move, MoveKind, Plan
from l3ha.planner import apply_plan, balance_bound, count_bound

from .helpers import agent, router, snapshot


def brute_force(busy: list[int], total: list[int]) -> int | None:
    """Fewest moves over every choice of which agents get the +1 slots."""
    n = len(total)
    busy_floor, busy_rem = divmod(sum(busy), n)
    total_floor, total_rem = divmod(sum(total), n)
    best = None
    for high_busy in itertools.combinations(range(n), busy_rem):
        for high_total in itertools.combinations(range(n), total_rem):
            cost = 0
            for i in range(n):
                busy_target = busy_floor + (i in high_busy)
                quiet_target = total_floor + (i in high_total) - busy_target
                if quiet_target < 0:
                    break
                cost += max(0, busy[i] - busy_target)
                cost += max(0, total[i] - busy[i] - quiet_target)
            else:
                best = cost if best is None else min(best, cost)
    return best


def test_count_bound_examples() -> None:
    assert count_bound([66, 67, 67, 64, 0]) == 52
    assert count_bound([10, 0, 0]) == 6
    assert count_bound([3, 3, 4]) == 0
    assert count_bound([]) == 0


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 7)), min_size=1, max_size=5))
def test_balance_bound_is_exact_or_a_valid_bound(agents: list[tuple[int, int]]) -> None:
    busy = [b for b, _ in agents]
    total = [b + q for b, q in agents]
    exact = brute_force(busy, total)
    bound = balance_bound(busy, total)
    assert exact is not None
    assert bound <= exact
    assert bound >= max(count_bound(total), count_bound(busy))
    if sum(total) // len(total) - sum(busy) // len(total) >= 1:
        assert bound == exact


def test_apply_plan_moves_binds_and_replaces() -> None:
    snap = snapshot(
        [agent("a"), agent("b"), agent("c")],
        [router("r"), router("u"), router("ha", ha=True)],
        {"r": "a", "ha": ["a", "b"]},
    )
    plan = Plan(
        action="test",
        moves=(
            Move("r", MoveKind.MOVE, "b", "a"),
            Move("u", MoveKind.BIND, "c"),
            Move("ha", MoveKind.ADD_REPLICA, "c", "a"),
            Move("ha", MoveKind.REMOVE_REPLICA, None, "a"),
        ),
    )
    after = apply_plan(snap, plan)
    assert {(b.router_id, b.agent_id) for b in after.bindings} == {
        ("r", "b"),
        ("u", "c"),
        ("ha", "b"),
        ("ha", "c"),
    }
    assert snap.bindings_of_agent("a")  # the input is unchanged


def test_apply_plan_rejects_a_move_that_does_not_fit() -> None:
    snap = snapshot([agent("a"), agent("b")], [router("r")], {"r": "a"})
    with pytest.raises(BadInputError, match="not bound"):
        apply_plan(snap, Plan("x", (Move("r", MoveKind.MOVE, "b", "b"),)))
    with pytest.raises(BadInputError, match="already bound"):
        apply_plan(snap, Plan("x", (Move("r", MoveKind.BIND, "a"),)))
