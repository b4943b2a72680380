"""Executor options reject nonsense in one line; results summarise and serialise cleanly.

A router the plan could not place is part of the result: listed with its
reason, counted as "unplaced", and the run is not ok (exit code 1).
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from l3ha.errors import BadInputError
from l3ha.executor import ExecutorOptions, MoveOutcome, MoveResult, RunResult
from l3ha.model import Move, MoveKind, Unplaceable


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("concurrency", 0, "--concurrency"),
        ("rate", 0.0, "--rate"),
        ("rate", -2.0, "--rate"),
        ("port_timeout", -1.0, "--port-timeout"),
        ("per_target_inflight", 0, "in-flight"),
        ("burst", 0, "burst"),
        ("port_poll_window", 0, "window"),
    ],
)
def test_bad_options_are_one_line_user_errors(field: str, value: object, words: str) -> None:
    with pytest.raises(BadInputError, match=words) as caught:
        ExecutorOptions(**{field: value})  # type: ignore[arg-type]
    assert "\n" not in str(caught.value)


def test_backoff_grows_and_is_capped() -> None:
    options = ExecutorOptions(backoff=0.5, backoff_factor=2.0, backoff_max=3.0)
    assert [options.backoff_delay(n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 3.0]


def result_of(*outcomes: MoveOutcome) -> RunResult:
    results = tuple(
        MoveResult(
            Move(f"r{i}", MoveKind.MOVE, "b", "a"),
            o,
            f"why {i}",
            "b",
            pending_ports=("p1",) if o is MoveOutcome.PENDING else (),
        )
        for i, o in enumerate(outcomes)
    )
    return RunResult("evacuate", results, operation_id=7)


def test_pending_and_skipped_are_not_failures_but_unhosted_and_rollback_are() -> None:
    assert result_of(MoveOutcome.MOVED, MoveOutcome.PENDING, MoveOutcome.SKIPPED).exit_code == 0
    for bad in (MoveOutcome.FAILED, MoveOutcome.UNHOSTED, MoveOutcome.ROLLED_BACK):
        assert result_of(MoveOutcome.MOVED, bad).exit_code == 1


def test_summary_is_plain_data() -> None:
    result = result_of(MoveOutcome.MOVED, MoveOutcome.PENDING, MoveOutcome.UNHOSTED)
    summary = json.loads(json.dumps(result.summary()))
    assert summary["counts"]["moved"] == 1 and summary["counts"]["failed"] == 0
    assert summary["pending"] == [{"router": "r1", "target": "b", "ports": ["p1"]}]
    assert summary["unhosted"] == ["r2"]
    assert summary["failed"] == [{"router": "r2", "outcome": "unhosted", "reason": "why 2"}]
    rows = [r.as_row() for r in result.results]
    assert json.loads(json.dumps(rows))[1]["pending_ports"] == ["p1"]


def test_unplaced_routers_fail_the_run_and_are_listed_with_their_reasons() -> None:
    unplaced = (Unplaceable("r9", "no eligible agent in AZ nova-2"),)
    result = replace(result_of(MoveOutcome.MOVED), unplaced=unplaced)
    assert not result.ok and result.exit_code == 1
    summary = json.loads(json.dumps(result.summary()))
    assert summary["unplaced"] == [{"router": "r9", "reason": "no eligible agent in AZ nova-2"}]
    assert summary["counts"]["unplaced"] == 1 and summary["counts"]["moved"] == 1
    assert {"outcome": "unplaced", "routers": 1} in result.summary_rows()
    assert result_of(MoveOutcome.MOVED).counts()["unplaced"] == 0
