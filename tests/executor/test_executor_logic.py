"""Executor behaviour at exact failure points, against the in-memory cloud.

What the emulator cannot inject precisely (a 409 from one target, a lost
answer, a source that comes back after exactly N moves) is tested here; the
end-to-end behaviour is in test_emulator_e2e.py.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from tests.executor.memcloud_executor import (
    DEAD,
    Fault,
    MemCloud,
    evac_cloud,
    evac_plan,
    run,
)

from l3ha.clock import ManualClock
from l3ha.errors import ApiTimeoutError, BadInputError, ConflictError, ServerError
from l3ha.executor import (
    Executor,
    ExecutorOptions,
    MoveOutcome,
    Progress,
    snapshot_candidates,
)
from l3ha.journal import Journal, MoveStep, OperationStatus
from l3ha.model import AgentMode, Move, MoveKind, Plan, Unplaceable


def test_evacuation_moves_every_router_and_journals_each_step(tmp_path: Path) -> None:
    cloud = evac_cloud()
    result, journal, _ = run(cloud, evac_plan(), tmp_path)
    assert result.ok and result.exit_code == 0
    assert [r.outcome for r in result.results] == [MoveOutcome.MOVED] * 6
    assert all(cloud.hosts_of(f"r{i}") == ["bc"[i % 2]] for i in range(6))
    moves = journal.moves(result.operation_id or 0)
    assert all(m.outcome == "moved" for m in moves)
    steps = [s for s, _, _ in journal.events(moves[0].id)]
    assert steps == ["intent", "unbound", "bound", "verified", "done:moved"]
    assert journal.operation(result.operation_id or 0).status is OperationStatus.DONE
    assert journal.unfinished_operations() == []
    for router in cloud.routers:  # unbind always precedes bind, per router
        ops = [op for op, r, _ in cloud.writes if r == router]
        assert ops == ["unbind", "bind"]


def test_source_alive_again_mid_evacuation_skips_the_rest(tmp_path: Path) -> None:
    cloud = evac_cloud(8)

    def revive_after_third_bind(c: MemCloud, op: str, router: str, agent: str) -> None:
        if op == "bind" and sum(1 for w in c.writes if w[0] == "bind") == 3:
            c.set_agent("a", alive=True)

    cloud.hooks.append(revive_after_third_bind)
    result, _, _ = run(cloud, evac_plan(8), tmp_path, concurrency=1)
    outcomes = [r.outcome for r in result.results]
    assert outcomes == [MoveOutcome.MOVED] * 3 + [MoveOutcome.SKIPPED] * 5
    assert all("alive again" in r.reason for r in result.results[3:])
    assert all(cloud.hosts_of(f"r{i}") == ["a"] for i in range(3, 8))
    assert result.ok  # skipping is the right thing, not a failure


def test_canary_then_recheck_stops_when_source_returns(tmp_path: Path) -> None:
    cloud = evac_cloud(6)
    moved: list[str] = []

    def revive_when_canary_done(c: MemCloud, op: str, router: str, agent: str) -> None:
        if op == "bind":
            moved.append(router)
            if len(moved) == 2:
                c.set_agent("a", alive=True)

    cloud.hooks.append(revive_when_canary_done)
    result, _, _ = run(cloud, evac_plan(6, canary=2), tmp_path, concurrency=8)
    outcomes = [r.outcome for r in result.results]
    assert outcomes[:2] == [MoveOutcome.MOVED] * 2
    assert outcomes[2:] == [MoveOutcome.SKIPPED] * 4
    assert len([w for w in cloud.writes if w[0] == "bind"]) == 2


def test_a_failed_canary_batch_stops_the_rest(tmp_path: Path) -> None:
    cloud = evac_cloud(5)
    cloud.faults.append(Fault("bind", ConflictError("refused"), times=100))
    result, _, _ = run(cloud, evac_plan(5, canary=2), tmp_path)
    outcomes = [r.outcome for r in result.results]
    assert outcomes[:2] == [MoveOutcome.UNHOSTED] * 2
    assert outcomes[2:] == [MoveOutcome.SKIPPED] * 3
    assert all(cloud.hosts_of(f"r{i}") == ["a"] for i in range(2, 5))


def test_the_executor_does_not_retry_what_the_cloud_already_retried(tmp_path: Path) -> None:
    """A retryable error reaching the executor has used up the adapter's budget: the
    executor goes to the next candidate at once instead of asking the same agent again."""
    cloud = evac_cloud(1)
    cloud.faults.append(Fault("bind", ServerError("503 (temporary; retried 4 times)"), agent="b"))
    cloud.faults[0].times = 2
    result, _, _ = run(cloud, evac_plan(1), tmp_path, fallbacks={"r0": ["c"]})
    (only,) = result.results
    assert only.outcome is MoveOutcome.MOVED and only.target == "c"
    assert only.attempts == 2 and "b: 503" in only.reason  # b once, then c
    assert cloud.faults[0].times == 1  # b was asked once, not again
    assert cloud.hosts_of("r0") == ["c"]


def test_conflict_on_the_target_falls_back_to_the_next_candidate(tmp_path: Path) -> None:
    cloud = evac_cloud(1)
    cloud.faults.append(Fault("bind", ConflictError("nope"), agent="b"))
    result, journal, _ = run(cloud, evac_plan(1), tmp_path, fallbacks={"r0": ["c", "d"]})
    (only,) = result.results
    assert only.outcome is MoveOutcome.MOVED and only.target == "c"
    assert cloud.hosts_of("r0") == ["c"]
    (move,) = journal.moves(result.operation_id or 0)
    assert move.target == "c"


def test_disabled_or_dead_target_is_passed_over_before_any_write(tmp_path: Path) -> None:
    cloud = evac_cloud(2)
    cloud.set_agent("b", admin_state_up=False)
    cloud.set_agent("c", alive=False)
    clock = ManualClock()
    snapshot_fallbacks = snapshot_candidates(cloud.read_snapshot())
    executor = Executor(
        cloud, Journal(tmp_path, clock), clock, ExecutorOptions(port_poll_interval=0.5)
    )
    result = executor.run(evac_plan(2), fallback_targets=snapshot_fallbacks)
    assert [r.target for r in result.results] == ["d", "d"]
    assert not [w for w in cloud.writes if w[2] in ("b", "c")]


def test_no_target_and_live_source_rolls_back(tmp_path: Path) -> None:
    cloud = MemCloud.build({"a": {}, "b": {}}, {"r0": ["a"]})
    cloud.faults.append(Fault("bind", ConflictError("refused"), agent="b", times=10))
    plan = Plan("migrate", (Move("r0", MoveKind.MOVE, target="b", source="a"),))
    result, _, _ = run(cloud, plan, tmp_path)
    (only,) = result.results
    assert only.outcome is MoveOutcome.ROLLED_BACK and only.target == "a"
    assert cloud.hosts_of("r0") == ["a"]
    assert result.exit_code == 1


def test_no_target_and_dead_source_is_reported_unhosted_loudly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cloud = evac_cloud(1)
    cloud.faults.append(Fault("bind", ConflictError("refused"), times=100))
    with caplog.at_level(logging.ERROR):
        result, journal, _ = run(cloud, evac_plan(1), tmp_path, fallbacks={"r0": ["c"]})
    (only,) = result.results
    assert only.outcome is MoveOutcome.UNHOSTED and "NO AGENT" in only.reason
    assert result.summary()["unhosted"] == ["r0"]
    assert "r0" in caplog.text and "NO agent" in caplog.text
    assert result.exit_code == 1
    assert journal.operation(result.operation_id or 0).status is OperationStatus.FAILED


def test_a_lost_answer_is_judged_by_reading_back(tmp_path: Path) -> None:
    cloud = evac_cloud(1)
    cloud.faults.append(Fault("bind", ApiTimeoutError("timeout"), after_effect=True, times=10))
    result, _, _ = run(cloud, evac_plan(1), tmp_path)
    assert result.results[0].outcome is MoveOutcome.MOVED
    assert cloud.hosts_of("r0") == ["b"]


def test_failed_unbind_leaves_the_router_on_its_source(tmp_path: Path) -> None:
    cloud = MemCloud.build({"a": {}, "b": {}}, {"r0": ["a"]})
    cloud.faults.append(Fault("unbind", ConflictError("no")))
    plan = Plan("migrate", (Move("r0", MoveKind.MOVE, target="b", source="a"),))
    result, _, _ = run(cloud, plan, tmp_path)
    assert result.results[0].outcome is MoveOutcome.FAILED
    assert "unbind" in result.results[0].reason
    assert cloud.hosts_of("r0") == ["a"]


def test_ports_not_active_by_the_timeout_is_pending_not_failed(tmp_path: Path) -> None:
    cloud = evac_cloud(2)
    cloud.never_active.add("c")
    result, _, _ = run(cloud, evac_plan(2), tmp_path, port_timeout=5.0)
    first, second = result.results
    assert first.outcome is MoveOutcome.MOVED
    assert second.outcome is MoveOutcome.PENDING
    assert second.pending_ports == ("r1-gw", "r1-if")
    assert "r1-gw" in second.reason
    assert result.ok and result.summary()["pending"][0]["ports"] == ["r1-gw", "r1-if"]


def test_ports_are_waited_for_until_active(tmp_path: Path) -> None:
    cloud = evac_cloud(3)
    cloud.polls_to_active = 3
    result, _, _ = run(cloud, evac_plan(3), tmp_path, port_timeout=60.0)
    assert all(r.outcome is MoveOutcome.MOVED for r in result.results)
    assert all(cloud.polls[f"r{i}"] >= 4 for i in range(3))


def test_no_wait_never_reads_ports(tmp_path: Path) -> None:
    cloud = evac_cloud(3)
    result, _, _ = run(cloud, evac_plan(3), tmp_path, wait_ports=False)
    assert all(r.outcome is MoveOutcome.MOVED for r in result.results)
    assert cloud.polls == {f"r{i}": 0 for i in range(3)}


def test_dry_run_writes_nothing_not_even_the_journal(tmp_path: Path) -> None:
    cloud = evac_cloud(3)
    executor = Executor(cloud, None, ManualClock(), ExecutorOptions(dry_run=True))
    result = executor.run(evac_plan(3))
    assert [r.outcome for r in result.results] == [MoveOutcome.PLANNED] * 3
    assert result.dry_run and result.operation_id is None
    assert cloud.writes == []
    assert list(tmp_path.iterdir()) == []


def test_a_real_run_needs_a_journal() -> None:
    with pytest.raises(BadInputError, match="journal"):
        Executor(evac_cloud(1), None, ManualClock()).run(evac_plan(1))


def test_per_target_inflight_limit_is_never_exceeded(tmp_path: Path) -> None:
    cloud = MemCloud.build({"a": DEAD, "b": {}}, {f"r{i}": ["a"] for i in range(12)})
    cloud.polls_to_active = 2
    peak = {"bound_not_active": 0}

    def watch(c: MemCloud, op: str, router: str, agent: str) -> None:
        if op == "bind":
            waiting = sum(1 for r, n in c.polls.items() if c.bindings[r] == ["b"] and n <= 2)
            peak["bound_not_active"] = max(peak["bound_not_active"], waiting)

    cloud.hooks.append(watch)
    plan = evac_plan(12, targets=("b",))
    result, _, _ = run(cloud, plan, tmp_path, per_target_inflight=3, concurrency=8)
    assert all(r.outcome is MoveOutcome.MOVED for r in result.results)
    assert 1 <= peak["bound_not_active"] <= 3


def test_rate_limit_spaces_moves_on_the_clock(tmp_path: Path) -> None:
    cloud = evac_cloud(5)
    result, _, clock = run(cloud, evac_plan(5), tmp_path, rate=2.0, burst=1, wait_ports=False)
    assert all(r.outcome is MoveOutcome.MOVED for r in result.results)
    assert clock.monotonic() - 1000.0 >= 2.0 - 1e-6  # 5 moves at 2/s with burst 1


def test_replica_is_added_before_the_old_one_is_removed(tmp_path: Path) -> None:
    cloud = MemCloud.build({"a": DEAD, "b": {}, "c": {}}, {"h1": ["a", "b"]}, ha={"h1"})
    plan = Plan(
        "repair",
        (
            Move("h1", MoveKind.ADD_REPLICA, target="c", source="a"),
            Move("h1", MoveKind.REMOVE_REPLICA, target=None, source="a"),
        ),
    )
    result, _, _ = run(cloud, plan, tmp_path)
    assert [r.outcome for r in result.results] == [MoveOutcome.MOVED, MoveOutcome.MOVED]
    assert cloud.writes == [("bind", "h1", "c"), ("unbind", "h1", "a")]
    assert sorted(cloud.hosts_of("h1")) == ["b", "c"]


def test_failed_replica_add_keeps_the_old_replica(tmp_path: Path) -> None:
    cloud = MemCloud.build({"a": DEAD, "b": {}, "c": {}}, {"h1": ["a", "b"]}, ha={"h1"})
    cloud.faults.append(Fault("bind", ConflictError("no"), times=5))
    plan = Plan(
        "repair",
        (
            Move("h1", MoveKind.ADD_REPLICA, target="c", source="a"),
            Move("h1", MoveKind.REMOVE_REPLICA, target=None, source="a"),
        ),
    )
    result, _, _ = run(cloud, plan, tmp_path)
    assert [r.outcome for r in result.results] == [MoveOutcome.FAILED, MoveOutcome.SKIPPED]
    assert sorted(cloud.hosts_of("h1")) == ["a", "b"]


def test_removing_the_only_binding_is_refused(tmp_path: Path) -> None:
    cloud = MemCloud.build({"a": {}, "b": {}}, {"h1": ["a"]}, ha={"h1"})
    plan = Plan("drain", (Move("h1", MoveKind.REMOVE_REPLICA, target=None, source="a"),))
    result, _, _ = run(cloud, plan, tmp_path)
    assert result.results[0].outcome is MoveOutcome.FAILED
    assert cloud.hosts_of("h1") == ["a"] and cloud.writes == []


def test_bind_of_an_unhosted_router_and_already_hosted_skip(tmp_path: Path) -> None:
    cloud = MemCloud.build({"a": {}, "b": {"mode": AgentMode.DVR}}, {"r0": [], "r1": ["a"]})
    plan = Plan(
        "repair",
        (
            Move("r0", MoveKind.BIND, target="b"),
            Move("r1", MoveKind.BIND, target="a"),
        ),
    )
    result, _, _ = run(cloud, plan, tmp_path, fallbacks={"r0": ["a"]})
    assert [r.outcome for r in result.results] == [MoveOutcome.MOVED, MoveOutcome.SKIPPED]
    assert cloud.hosts_of("r0") == ["a"]


def test_router_already_moved_elsewhere_is_left_where_it_is(tmp_path: Path) -> None:
    """No read before the unbind (it is idempotent): its read-back finds the router on c,
    a live agent, where it stays; nothing is bound and nothing is fought over."""
    cloud = MemCloud.build({"a": DEAD, "b": {}, "c": {}}, {"r0": ["c"]})
    plan = Plan("evacuate", (Move("r0", MoveKind.MOVE, target="b", source="a"),))
    result, _, _ = run(cloud, plan, tmp_path)
    (only,) = result.results
    assert only.outcome is MoveOutcome.MOVED and only.target == "c"
    assert "found there when the unbind was read back" in only.reason
    assert cloud.writes == [("unbind", "r0", "a")]  # a no-op: r0 was not on a
    assert cloud.hosts_of("r0") == ["c"]


def test_progress_is_reported_once_per_move(tmp_path: Path) -> None:
    cloud = evac_cloud(4)
    seen: list[Progress] = []
    clock = ManualClock()
    Executor(cloud, Journal(tmp_path, clock), clock, ExecutorOptions(wait_ports=False)).run(
        evac_plan(4), progress=seen.append
    )
    assert sorted(p.done for p in seen) == [1, 2, 3, 4]
    assert {p.total for p in seen} == {4}
    assert {p.last.router_id for p in seen} == {"r0", "r1", "r2", "r3"}


def test_summary_lists_counts_and_reasons(tmp_path: Path) -> None:
    cloud = evac_cloud(2)
    cloud.faults.append(Fault("bind", ConflictError("refused"), router="r1", times=100))
    result, _, _ = run(cloud, evac_plan(2), tmp_path)
    summary = result.summary()
    assert summary["counts"]["moved"] == 1 and summary["counts"]["unhosted"] == 1
    assert summary["failed"][0]["router"] == "r1"
    assert {"outcome": "moved", "routers": 1} in result.summary_rows()


def test_journal_steps_show_where_a_move_stopped(tmp_path: Path) -> None:
    cloud = evac_cloud(1)
    cloud.faults.append(Fault("bind", ConflictError("refused"), times=100))
    result, journal, _ = run(cloud, evac_plan(1), tmp_path, fallbacks={"r0": ["c"]})
    (move,) = journal.moves(result.operation_id or 0)
    steps = [s for s, _, _ in journal.events(move.id)]
    assert steps[:2] == ["intent", "unbound"]
    assert steps[-1] == "done:unhosted"
    assert move.step is MoveStep.DONE


def test_router_hosted_by_someone_else_mid_move_is_left_there(tmp_path: Path) -> None:
    """Reported MOVED where it is (a live agent), not a failure or a skip; see
    test_neutron_scheduling_logic.py for the other cases of Neutron scheduling in the gap."""
    cloud = evac_cloud(1)

    def neutron_autofailover(c: MemCloud, op: str, router: str, agent: str) -> None:
        if op == "unbind":
            with c.lock:
                c.bindings[router].append("d")

    cloud.hooks.append(neutron_autofailover)
    result, _, _ = run(cloud, evac_plan(1), tmp_path, fallbacks={"r0": ["c"]})
    (only,) = result.results
    assert only.outcome is MoveOutcome.MOVED and only.target == "d"
    assert "Neutron scheduled it to host-d" in only.reason
    assert cloud.hosts_of("r0") == ["d"]
    assert [w for w in cloud.writes if w[0] == "bind"] == []  # b refused: no fight over c


def test_no_more_than_concurrency_moves_write_at_once(tmp_path: Path) -> None:
    cloud = MemCloud.build({"a": DEAD, "b": {}, "c": {}}, {f"r{i}": ["a"] for i in range(12)})
    lock = threading.Lock()
    active = {"now": 0, "peak": 0}

    def overlap(c: MemCloud, op: str, router: str, agent: str) -> None:
        if op != "unbind":
            return
        with lock:
            active["now"] += 1
            active["peak"] = max(active["peak"], active["now"])
        time.sleep(0.02)  # real time: lets concurrent writers overlap
        with lock:
            active["now"] -= 1

    cloud.hooks.append(overlap)
    result, _, _ = run(cloud, evac_plan(12), tmp_path, concurrency=3, wait_ports=False)
    assert result.ok
    assert 2 <= active["peak"] <= 3


def test_a_journal_that_cannot_be_written_stops_the_run_without_hanging(tmp_path: Path) -> None:
    cloud = evac_cloud(6)
    clock = ManualClock()
    journal = Journal(tmp_path / "state", clock)

    def break_journal(c: MemCloud, op: str, router: str, agent: str) -> None:
        if op == "bind" and router == "r1":
            journal.close()  # every later journal write fails

    cloud.hooks.append(break_journal)
    options = ExecutorOptions(concurrency=1, wait_ports=False)
    result = Executor(cloud, journal, clock, options).run(evac_plan(6))
    outcomes = [r.outcome for r in result.results]
    assert outcomes[:2] == [MoveOutcome.MOVED] * 2  # r1 is on its target: reported as it is
    assert outcomes[2:] == [MoveOutcome.SKIPPED] * 4
    assert all("journal" in r.reason for r in result.results[2:])
    assert any("journal write failed" in w for w in result.warnings)
    assert all(cloud.hosts_of(f"r{i}") == ["a"] for i in range(2, 6))  # nothing written blind


def test_a_plan_with_unplaceable_routers_runs_the_rest_and_exits_1(tmp_path: Path) -> None:
    cloud = evac_cloud(3)
    unplaceable = (Unplaceable("r2", "every target is at --max-routers-per-agent"),)
    plan = replace(evac_plan(2), unplaceable=unplaceable)
    result, journal, _ = run(cloud, plan, tmp_path)
    assert [r.outcome for r in result.results] == [MoveOutcome.MOVED] * 2
    assert result.unplaced == unplaceable
    assert not result.ok and result.exit_code == 1
    assert result.counts()["unplaced"] == 1
    assert result.summary()["unplaced"] == [
        {"router": "r2", "reason": "every target is at --max-routers-per-agent"}
    ]
    assert cloud.hosts_of("r2") == ["a"]  # still on the dead agent: that is why it fails
    assert journal.operation(result.operation_id or 0).status is OperationStatus.FAILED
    dry = Executor(cloud, None, ManualClock(), ExecutorOptions(dry_run=True)).run(plan)
    assert dry.unplaced == unplaceable and dry.exit_code == 1
