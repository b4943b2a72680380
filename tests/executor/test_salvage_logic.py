"""Salvage: a move cut in its middle is read back and put back, at exact steps.

When reading the bindings keeps failing past the move's retries (an API in
trouble right after the unbind), the executor does not report the router
unhosted at once: with its own retries it reads the bindings and re-binds
the router to the target, another candidate or its usable source; only
then does it report UNHOSTED (or FAILED, "MAY HAVE NO AGENT", when the
bindings could never be read), loudly.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from tests.executor.memcloud_executor import Fault, MemCloud, evac_cloud, evac_plan, run

from l3ha.errors import ConflictError, ServerError
from l3ha.executor import MoveOutcome
from l3ha.journal import OperationStatus
from l3ha.model import Move, MoveKind, Plan


def after_unbind(cloud: MemCloud, *faults: Fault) -> None:
    """Inject ``faults`` right after the first unbind (the router then has no agent)."""

    def inject(c: MemCloud, op: str, router: str, agent: str) -> None:
        if op == "unbind" and not any(f in c.faults for f in faults):
            c.faults.extend(faults)

    cloud.hooks.append(inject)


def test_unreadable_bindings_mid_move_are_read_again_and_the_router_rebound(
    tmp_path: Path,
) -> None:
    cloud = evac_cloud(1)
    after_unbind(
        cloud,
        Fault("bind", ConflictError("refused once"), agent="b"),
        Fault("router_bindings", ServerError("503"), times=5),  # past the move's retries
    )
    result, journal, clock = run(cloud, evac_plan(1), tmp_path, backoff=1.0)
    (only,) = result.results
    assert only.outcome is MoveOutcome.MOVED and only.target == "b"
    assert "re-bound after" in only.reason and "503" in only.reason
    assert cloud.hosts_of("r0") == ["b"]
    (move,) = journal.moves(result.operation_id or 0)
    details = [d for s, _, d in journal.events(move.id) if s == "intent"]
    assert any("salvage" in d for d in details)  # intent journaled before the re-bind
    assert clock.monotonic() - 1000.0 >= 3.0  # waited between its own rounds
    assert result.ok


def test_salvage_binds_another_candidate_when_the_target_keeps_refusing(
    tmp_path: Path,
) -> None:
    cloud = evac_cloud(1)
    after_unbind(
        cloud,
        Fault("bind", ConflictError("refused"), agent="b", times=100),
        Fault("router_bindings", ServerError("503"), times=2),
    )
    result, _, _ = run(cloud, evac_plan(1), tmp_path, fallbacks={"r0": ["c"]})
    (only,) = result.results
    assert only.outcome is MoveOutcome.MOVED and only.target == "c"
    assert cloud.hosts_of("r0") == ["c"]


def test_salvage_rolls_back_to_a_usable_source(tmp_path: Path) -> None:
    cloud = MemCloud.build({"a": {}, "b": {}}, {"r0": ["a"]})
    after_unbind(
        cloud,
        Fault("bind", ConflictError("refused"), agent="b", times=100),
        Fault("router_bindings", ServerError("503"), times=2),
    )
    plan = Plan("migrate", (Move("r0", MoveKind.MOVE, target="b", source="a"),))
    result, _, _ = run(cloud, plan, tmp_path)
    (only,) = result.results
    assert only.outcome is MoveOutcome.ROLLED_BACK and only.target == "a"
    assert cloud.hosts_of("r0") == ["a"]
    assert result.exit_code == 1


def test_salvage_does_not_roll_back_to_a_disabled_source(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cloud = MemCloud.build({"a": {"admin_state_up": False}, "b": {}}, {"r0": ["a"]})
    after_unbind(
        cloud,
        Fault("bind", ConflictError("refused"), agent="b", times=1000),
        Fault("router_bindings", ServerError("503"), times=2),
    )
    plan = Plan("migrate", (Move("r0", MoveKind.MOVE, target="b", source="a"),))
    with caplog.at_level(logging.ERROR):
        result, _, clock = run(cloud, plan, tmp_path, salvage_patience=20.0)
    (only,) = result.results
    assert only.outcome is MoveOutcome.UNHOSTED and "NO AGENT" in only.reason
    assert "source is not usable" in only.reason
    assert cloud.hosts_of("r0") == []
    assert "r0" in caplog.text and "NO agent" in caplog.text
    assert 10.0 <= clock.monotonic() - 1000.0 <= 25.0  # tried for about its patience


def test_an_unhosted_end_is_retried_until_the_api_answers(tmp_path: Path) -> None:
    cloud = evac_cloud(1)
    after_unbind(cloud, Fault("bind", ServerError("503"), times=4))
    result, _, _ = run(cloud, evac_plan(1), tmp_path)
    (only,) = result.results
    assert only.outcome is MoveOutcome.MOVED and cloud.hosts_of("r0") == ["b"]
    assert "re-bound after" in only.reason


def test_bindings_that_never_read_back_are_a_loud_failure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cloud = evac_cloud(2)
    after_unbind(
        cloud,
        Fault("bind", ConflictError("refused"), router="r0", times=1),
        Fault("router_bindings", ServerError("503"), router="r0", times=10_000),
    )
    with caplog.at_level(logging.ERROR):
        result, journal, _ = run(
            cloud, evac_plan(2), tmp_path, salvage_patience=5.0, concurrency=1
        )
    first, second = result.results
    assert first.outcome is MoveOutcome.FAILED and "MAY HAVE NO AGENT" in first.reason
    assert "l3ha repair" in first.reason and "MAY HAVE NO AGENT" in caplog.text
    assert second.outcome is MoveOutcome.MOVED  # the rest of the run goes on
    assert journal.operation(result.operation_id or 0).status is OperationStatus.FAILED
