"""A caller's stop request (a daemon shutting down or losing leadership): moves in flight
finish, no new move starts, and the operation stays open for the next run to finish."""

from __future__ import annotations

from pathlib import Path

from tests.executor.memcloud_executor import evac_cloud, evac_plan

from l3ha.clock import ManualClock
from l3ha.executor import Executor, ExecutorOptions, MoveOutcome, recover
from l3ha.journal import Journal


def test_stop_lets_started_moves_finish_and_leaves_the_rest_open(tmp_path: Path) -> None:
    cloud = evac_cloud(6)
    clock = ManualClock()
    asked = []

    def should_stop() -> bool:
        asked.append(1)
        return len(cloud.writes) >= 4  # two moves (unbind + bind each) written

    options = ExecutorOptions(concurrency=1, wait_ports=False)
    with Journal(tmp_path / "state", clock) as journal:
        result = Executor(cloud, journal, clock, options).run(evac_plan(6), should_stop=should_stop)
        outcomes = [r.outcome for r in result.results]
        assert outcomes[:2] == [MoveOutcome.MOVED, MoveOutcome.MOVED]
        assert set(outcomes[2:]) == {MoveOutcome.SKIPPED}
        assert "stopping" in result.results[-1].reason
        assert any("stays open" in w for w in result.warnings)
        assert asked
        (op,) = journal.unfinished_operations()
        open_moves = [m for m in journal.moves(op.id) if not m.finished]
        assert len(open_moves) == 4
    # The next run finds the operation open; recovery leaves the un-started moves
    # hosted where they are (an evacuation is then run again for them).
    with Journal(tmp_path / "state", clock) as journal:
        results = recover(cloud, journal, clock)
        assert len(results) == 4
        assert all(r.action.value == "left_hosted" for r in results)
        assert all(cloud.hosts_of(f"r{i}") == ["a"] for i in range(2, 6))
