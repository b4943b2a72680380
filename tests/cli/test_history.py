"""``l3ha history`` in-process against the emulator: one row per operation (drains and the
agent changes they make included) with who started it, ``--moves``, ``--last N`` counting
operations, ``history show OPERATION``, and a missing journal directory as bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from l3ha.cli.main import main
from l3ha.emulator import Emulator


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def state(emulator: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A journal holding a drain of net-1 and its undrain."""
    state = tmp_path / "state"
    for command in ("drain", "undrain"):
        code, _, err = run(capsys, command, "net-1", "--no-wait", "--state-dir", str(state))
        assert code == 0, err
    return state


def history(capsys: pytest.CaptureFixture[str], state: Path, *argv: str) -> object:
    code, out, err = run(capsys, "history", "--state-dir", str(state), "-f", "json", *argv)
    assert code == 0, err
    return json.loads(out)


def test_one_row_per_operation_with_who_started_it_and_counts(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = history(capsys, state)
    assert isinstance(rows, list)
    assert [r["what"] for r in rows] == ["enable-agent", "disable-agent", "drain"]
    assert {r["subject"] for r in rows} == {"net-1"}
    assert {r["started_by"] for r in rows} == {"command"}
    assert {r["outcome"] for r in rows} == {"done"}
    drain = rows[2]
    moves = history(capsys, state, "--moves")
    assert isinstance(moves, list) and drain["moves"] == len(moves) > 0
    assert drain["results"] == f"{len(moves)} moved"
    assert [r["moves"] for r in rows[:2]] == [0, 0]  # agent changes have no moves


def test_last_counts_operations_and_moves_lists_theirs(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert [r["what"] for r in history(capsys, state, "--last", "2")] == [  # type: ignore[attr-defined]
        "enable-agent",
        "disable-agent",
    ]
    assert history(capsys, state, "--last", "2", "--moves") == []
    moves = history(capsys, state, "--last", "3", "--moves")
    assert isinstance(moves, list) and {m["kind"] for m in moves} == {"drain"}


def test_show_gives_one_operation_with_its_moves(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = history(capsys, state, "show", "1")
    assert isinstance(shown, dict)
    assert shown["what"] == "drain" and shown["arguments"]["agent"] == "net-1"
    assert "names" not in shown["arguments"]  # they name the moves instead
    assert len(shown["move_list"]) == shown["moves"] > 0
    code, out, err = run(capsys, "history", "show", "2", "--state-dir", str(state))
    assert code == 0, err
    assert "disable-agent" in out and '"admin_state_up": false' in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["show"], "history show needs an OPERATION"),
        (["show", "99"], "no operation 99"),
        (["3"], "invalid choice: '3' (choose from 'show')"),
        (["list"], "invalid choice: 'list'"),
    ],
)
def test_a_bad_history_request_is_one_line_and_exit_2(
    state: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    try:
        code, out, err = run(capsys, "history", "--state-dir", str(state), *argv)
    except SystemExit as done:  # argparse's own errors
        code, (out, err) = int(str(done.code)), capsys.readouterr()
    assert (code, out) == (2, "")
    assert message in err and err.count("\n") == 1, err


def test_a_missing_default_journal_directory_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("L3HA_STATE_DIR", str(tmp_path / "nowhere"))
    code, out, err = run(capsys, "history")
    assert (code, out) == (2, "")
    missing = tmp_path / "nowhere"
    expected = f"no journal directory {missing}: give --state-dir DIR or set L3HA_STATE_DIR"
    assert err == f"l3ha: error: {expected}\n"
    assert not (tmp_path / "nowhere").exists()


def test_a_directory_without_a_journal_is_an_empty_history_and_stays_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert history(capsys, tmp_path) == []
    assert list(tmp_path.iterdir()) == []


def router_names(capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    code, out, err = run(capsys, "router", "list", "-f", "json", "-c", "id", "-c", "name")
    assert code == 0, err
    return {r["id"]: r["name"] for r in json.loads(out)}


def test_moves_show_router_names_and_hosts_with_ids_in_long(
    emulator: Emulator, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    names = router_names(capsys)
    hosts = {a["id"]: a["host"] for a in emulator.state()["agents"]}
    moves = history(capsys, state, "--moves")
    assert isinstance(moves, list) and moves
    assert "router_id" not in moves[0] and "source_id" not in moves[0]
    wide = history(capsys, state, "--moves", "--long")
    assert isinstance(wide, list) and len(wide) == len(moves)
    for row in wide:
        assert row["router"] == names[row["router_id"]] != row["router_id"]
        assert row["source"] == hosts[row["source_id"]] == "net-1"
        assert not row["target"] or row["target"] == hosts[row["target_id"]]
    ids = history(capsys, state, "--moves", "-c", "router_id")
    assert ids == [{"router_id": row["router_id"]} for row in wide]


def test_a_run_result_names_routers_and_hosts(
    emulator: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    names = router_names(capsys)
    code, out, err = run(
        capsys, "drain", "net-2", "--no-wait", "-f", "json", "--state-dir", str(tmp_path)
    )
    assert code == 0, err
    moves = json.loads(out)["moves"]
    assert moves and {m["source_host"] for m in moves} == {"net-2"}
    assert all(m["router_name"] == names[m["router"]] != m["router"] for m in moves)
    assert all(len(m["source"]) == 36 for m in moves)  # JSON keeps the ids scripts key on


def test_recovery_messages_name_the_router_and_the_hosts(
    emulator: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from l3ha.journal import Journal, MoveStep
    from l3ha.model import Move, MoveKind

    names = router_names(capsys)
    hosts = {a["id"]: a["host"] for a in emulator.state()["agents"]}
    code, out, err = run(capsys, "router", "list", "-f", "json", "--long")
    router = next(r for r in json.loads(out) if len(r["agent_ids"]) == 1)
    (source,) = router["agent_ids"]
    target = next(a for a in hosts if a != source)
    recorded = {**hosts, router["id"]: router["name"]}
    with Journal(tmp_path) as journal:  # a command killed after its intent
        _, (move,) = journal.begin_operation(
            "migrate", {"names": recorded}, [Move(router["id"], MoveKind.MOVE, target, source)]
        )
        journal.record_step(move, MoveStep.INTENT, target=target)
    code, out, err = run(capsys, "repair", "--no-wait", "--state-dir", str(tmp_path))
    assert code == 0, err
    expected = f"recovered router {names[router['id']]} ({router['id'][:8]}): left_hosted"
    assert expected in err and f"still hosted by {hosts[source]}" in err, err
    assert source not in err
