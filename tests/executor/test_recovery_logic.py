"""Recovery of interrupted operations judged from the cloud's state (in-memory cloud)."""

from __future__ import annotations

from pathlib import Path

from tests.executor.memcloud_executor import Fault, MemCloud, intent_checker

from l3ha.clock import ManualClock
from l3ha.errors import ConflictError
from l3ha.executor import RecoveryAction, recover
from l3ha.journal import Journal, MoveStep, OperationStatus
from l3ha.model import Move, MoveKind

DEAD = {"alive": False}


def interrupted(journal: Journal, moves: list[tuple[Move, list[MoveStep]]]) -> int:
    """Journal an operation cut short after the given steps of each move."""
    op_id, ids = journal.begin_operation("evacuate", {}, [m for m, _ in moves])
    for move_id, (move, steps) in zip(ids, moves, strict=True):
        for step in steps:
            journal.record_step(
                move_id, step, target=move.target if step is MoveStep.INTENT else None
            )
    journal.abandon(op_id)  # as if the process running it had died
    return op_id


def test_each_interrupted_state_is_finished_from_the_cloud(tmp_path: Path) -> None:
    cloud = MemCloud.build(
        {"a": DEAD, "b": {}, "c": {}},
        {"done": ["b"], "gap": [], "untouched": ["a"], "planned": ["a"]},
    )
    clock = ManualClock()
    journal = Journal(tmp_path, clock)
    op_id = interrupted(
        journal,
        [
            (
                Move("done", MoveKind.MOVE, "b", "a"),
                [MoveStep.INTENT, MoveStep.UNBOUND, MoveStep.BOUND],
            ),
            (Move("gap", MoveKind.MOVE, "b", "a"), [MoveStep.INTENT, MoveStep.UNBOUND]),
            (Move("untouched", MoveKind.MOVE, "c", "a"), [MoveStep.INTENT]),
            (Move("planned", MoveKind.MOVE, "c", "a"), []),
        ],
    )
    cloud.hooks.append(intent_checker(journal))
    results = {r.router_id: r for r in recover(cloud, journal, clock)}
    assert results["done"].action is RecoveryAction.ALREADY_DONE
    assert results["gap"].action is RecoveryAction.BOUND_TARGET and cloud.hosts_of("gap") == ["b"]
    assert results["untouched"].action is RecoveryAction.LEFT_HOSTED
    assert results["planned"].action is RecoveryAction.LEFT_HOSTED
    assert cloud.writes == [("bind", "gap", "b")]  # nothing replayed blindly
    assert journal.unfinished_operations() == []
    assert journal.operation(op_id).status is OperationStatus.RECOVERED
    outcomes = {m.router_id: m.outcome for m in journal.moves(op_id)}
    assert outcomes == {
        "done": "moved",
        "gap": "moved",
        "untouched": "skipped",
        "planned": "skipped",
    }


def test_unhosted_router_goes_to_another_agent_when_the_target_died(tmp_path: Path) -> None:
    cloud = MemCloud.build({"a": DEAD, "b": DEAD, "c": {}}, {"gap": [], "other": ["c"]})
    clock = ManualClock()
    journal = Journal(tmp_path, clock)
    interrupted(
        journal, [(Move("gap", MoveKind.MOVE, "b", "a"), [MoveStep.INTENT, MoveStep.UNBOUND])]
    )
    cloud.hooks.append(intent_checker(journal))
    (result,) = recover(cloud, journal, clock)
    assert result.action is RecoveryAction.BOUND_OTHER and result.agent == "c"
    assert cloud.hosts_of("gap") == ["c"]


def test_unhosted_router_goes_back_to_its_source_when_nothing_else_takes_it(
    tmp_path: Path,
) -> None:
    cloud = MemCloud.build({"a": {}, "b": {}}, {"gap": []})
    cloud.faults.append(Fault("bind", ConflictError("no"), agent="b", times=10))
    clock = ManualClock()
    journal = Journal(tmp_path, clock)
    interrupted(
        journal, [(Move("gap", MoveKind.MOVE, "b", "a"), [MoveStep.INTENT, MoveStep.UNBOUND])]
    )
    cloud.hooks.append(intent_checker(journal))
    (result,) = recover(cloud, journal, clock)
    assert result.action is RecoveryAction.BOUND_SOURCE
    assert cloud.hosts_of("gap") == ["a"]


def test_nowhere_to_go_is_reported_unhosted_and_the_operation_failed(tmp_path: Path) -> None:
    cloud = MemCloud.build({"a": DEAD, "b": DEAD}, {"gap": []})
    clock = ManualClock()
    journal = Journal(tmp_path, clock)
    op_id = interrupted(
        journal, [(Move("gap", MoveKind.MOVE, "b", "a"), [MoveStep.INTENT, MoveStep.UNBOUND])]
    )
    (result,) = recover(cloud, journal, clock)
    assert result.action is RecoveryAction.UNHOSTED and not result.ok
    assert "NO AGENT" in result.detail
    assert journal.operation(op_id).status is OperationStatus.FAILED


def test_dry_run_recovery_changes_nothing(tmp_path: Path) -> None:
    cloud = MemCloud.build({"a": DEAD, "b": {}}, {"gap": []})
    clock = ManualClock()
    journal = Journal(tmp_path, clock)
    interrupted(
        journal, [(Move("gap", MoveKind.MOVE, "b", "a"), [MoveStep.INTENT, MoveStep.UNBOUND])]
    )
    (result,) = recover(cloud, journal, clock, dry_run=True)
    assert result.action is RecoveryAction.WOULD_BIND
    assert cloud.writes == [] and len(journal.unfinished_operations()) == 1


def test_interrupted_replica_moves(tmp_path: Path) -> None:
    cloud = MemCloud.build(
        {"a": DEAD, "b": {}, "c": {}}, {"h1": ["a", "b", "c"], "h2": ["b"]}, ha={"h1", "h2"}
    )
    clock = ManualClock()
    journal = Journal(tmp_path, clock)
    interrupted(
        journal,
        [
            (Move("h1", MoveKind.ADD_REPLICA, "c", "a"), [MoveStep.INTENT, MoveStep.BOUND]),
            (Move("h1", MoveKind.REMOVE_REPLICA, None, "a"), []),
            (Move("h2", MoveKind.REMOVE_REPLICA, None, "a"), [MoveStep.INTENT]),
        ],
    )
    actions = [r.action for r in recover(cloud, journal, clock)]
    assert actions == [
        RecoveryAction.ALREADY_DONE,
        RecoveryAction.LEFT_HOSTED,
        RecoveryAction.ALREADY_DONE,
    ]
    assert cloud.writes == []
