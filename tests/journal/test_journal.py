"""The SQLite journal: permissions, steps in order, unfinished operations, history."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from l3ha.clock import ManualClock
from l3ha.errors import BadInputError
from l3ha.journal import (
    DB_NAME,
    Journal,
    MoveStep,
    OperationStatus,
    default_state_dir,
)
from l3ha.model import Move, MoveKind

MOVES = (
    Move("r1", MoveKind.MOVE, target="b", source="a", reason="evacuate a"),
    Move("r2", MoveKind.BIND, target="c", reason="unhosted"),
)


def open_journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "state", ManualClock())


def test_state_dir_is_private_and_files_are_0600(tmp_path: Path) -> None:
    with open_journal(tmp_path) as journal:
        journal.begin_operation("evacuate", {"agent": "a"}, MOVES)
        state = tmp_path / "state"
        assert stat.S_IMODE(state.stat().st_mode) == 0o700
        files = [p for p in state.iterdir() if p.name.startswith(DB_NAME)]
        assert files
        for path in files:
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name


def test_default_state_dir_follows_env_then_xdg_then_home() -> None:
    assert default_state_dir({"L3HA_STATE_DIR": "/x", "XDG_STATE_HOME": "/y"}) == Path("/x")
    assert default_state_dir({"XDG_STATE_HOME": "/y"}) == Path("/y/l3ha")
    assert default_state_dir({}) == Path.home() / ".local" / "state" / "l3ha"


def test_unusable_state_dir_is_a_one_line_user_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    with pytest.raises(BadInputError, match="cannot use state dir"):
        Journal(blocker / "sub")


def test_moves_are_planned_then_stepped_then_finished(tmp_path: Path) -> None:
    with open_journal(tmp_path) as journal:
        op_id, (m1, m2) = journal.begin_operation("evacuate", {"agent": "a"}, MOVES)
        journal.record_step(m1, MoveStep.INTENT, target="b")
        journal.record_step(m1, MoveStep.UNBOUND)
        journal.record_step(m1, MoveStep.BOUND, target="c", detail="fallback")
        journal.record_outcome(m1, "moved", "ok")
        moves = journal.moves(op_id)
        assert [m.router_id for m in moves] == ["r1", "r2"]
        assert moves[0].step is MoveStep.DONE and moves[0].outcome == "moved"
        assert moves[0].target == "c"
        assert moves[1].step is MoveStep.PLANNED and not moves[1].finished
        steps = [s for s, _, _ in journal.events(m1)]
        assert steps == ["intent", "unbound", "bound", "done:moved"]
        assert journal.event_count() == 4
        journal.record_outcome(m2, "skipped")
        journal.finish_operation(op_id, OperationStatus.DONE, "{}")
        op = journal.operation(op_id)
        assert op.status is OperationStatus.DONE and op.finished and op.args == {"agent": "a"}


def test_unfinished_operation_survives_reopening(tmp_path: Path) -> None:
    with open_journal(tmp_path) as journal:
        op_id, _ = journal.begin_operation("evacuate", {}, MOVES)
    with open_journal(tmp_path) as journal:
        assert [o.id for o in journal.unfinished_operations()] == [op_id]
        journal.finish_operation(op_id, OperationStatus.DONE)
        assert journal.unfinished_operations() == []


def test_operation_of_a_live_other_process_is_in_progress_not_interrupted(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with open_journal(tmp_path) as journal:
            op_id, _ = journal.begin_operation("evacuate", {}, MOVES)
            with journal._lock:  # make the operation belong to the child process
                journal._db.execute("UPDATE operations SET pid=? WHERE id=?", (child.pid, op_id))
            assert journal.unfinished_operations() == []
            assert [o.id for o in journal.unfinished_operations(include_live=True)] == [op_id]
            child.kill()
            child.wait()
            assert [o.id for o in journal.unfinished_operations()] == [op_id]
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_operation_running_in_this_process_is_not_interrupted_until_abandoned(
    tmp_path: Path,
) -> None:
    with open_journal(tmp_path) as journal:
        running, _ = journal.begin_operation("evacuate", {}, MOVES)
        assert journal.unfinished_operations() == []
        with open_journal(tmp_path) as other:  # another journal object, same process
            assert other.unfinished_operations() == []
        journal.abandon(running)
        assert [o.id for o in journal.unfinished_operations()] == [running]
        finished, _ = journal.begin_operation("drain", {}, MOVES)
        journal.finish_operation(finished, OperationStatus.DONE)
        assert [o.id for o in journal.unfinished_operations()] == [running]


def test_history_is_newest_first_and_limited(tmp_path: Path) -> None:
    with open_journal(tmp_path) as journal:
        ids = [journal.begin_operation(k, {}, MOVES)[0] for k in ("evacuate", "drain", "migrate")]
        assert [o.id for o in journal.history()] == ids[::-1]
        assert [o.kind for o in journal.history(last=2)] == ["migrate", "drain"]
        rows = journal.history_rows(last=1)
        assert [r["router"] for r in rows] == ["r1", "r2"]
        assert rows[0]["kind"] == "migrate" and rows[0]["step"] == "planned"
        with pytest.raises(BadInputError):
            journal.history(last=0)


def test_unknown_operation_is_a_user_error(tmp_path: Path) -> None:
    with open_journal(tmp_path) as journal, pytest.raises(BadInputError, match="no operation 42"):
        journal.operation(42)


def test_threads_may_record_steps_concurrently(tmp_path: Path) -> None:
    moves = tuple(Move(f"r{i}", MoveKind.BIND, target="a") for i in range(40))
    with open_journal(tmp_path) as journal:
        op_id, move_ids = journal.begin_operation("repair", {}, moves)

        def work(move_id: int) -> None:
            journal.record_step(move_id, MoveStep.INTENT, target="a")
            journal.record_step(move_id, MoveStep.BOUND)
            journal.record_outcome(move_id, "moved")

        threads = [threading.Thread(target=work, args=(m,)) for m in move_ids]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert all(m.outcome == "moved" for m in journal.moves(op_id))
        assert journal.event_count() == 3 * len(moves)


def test_a_killed_writer_loses_nothing_it_committed(tmp_path: Path) -> None:
    state = tmp_path / "state"
    script = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from l3ha.journal import Journal, MoveStep\n"
        "from l3ha.model import Move, MoveKind\n"
        "j = Journal(Path(sys.argv[1]))\n"
        "op, ids = j.begin_operation('evacuate', {}, [Move('r1', MoveKind.MOVE, 'b', 'a')])\n"
        "j.record_step(ids[0], MoveStep.INTENT, target='b')\n"
        "j.record_step(ids[0], MoveStep.UNBOUND)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, str(state)], check=False)
    assert proc.returncode == -9
    with Journal(state) as journal:
        (op,) = journal.unfinished_operations()
        (move,) = journal.moves(op.id)
        assert move.step is MoveStep.UNBOUND and move.target == "b"
    assert os.path.exists(state / DB_NAME)
