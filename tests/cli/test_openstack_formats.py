"""The ``openstack`` client's output conventions on ``l3ha`` lists and shows, in-process
against the emulator: ``-f csv|value|shell``, ``--long``, ``--sort-column``, ``--fit-width``."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from l3ha.cli.main import main
from l3ha.emulator import Emulator


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_long_shows_every_column_and_default_hides_some(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    _, default, _ = run(capsys, "agent", "list", "-f", "json")
    _, wide, _ = run(capsys, "agent", "list", "-f", "json", "--long")
    assert "started_at" not in json.loads(default)[0]
    assert {"heartbeat", "started_at", "host", "routers"} <= set(json.loads(wide)[0])
    _, routers, _ = run(capsys, "router", "list", "-f", "json", "--long")
    assert {"agent_ids", "tags", "project_id"} <= set(json.loads(routers)[0])


def test_csv_has_the_keys_as_header_and_one_record_per_router(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "router", "list", "-f", "csv", "-c", "name", "-c", "weight")
    assert code == 0, err
    records = list(csv.reader(io.StringIO(out)))
    assert records[0] == ["name", "weight"]
    assert len(records) == 21  # the header and 20 routers
    assert all(int(weight) >= 1 for _, weight in records[1:])


def test_value_sorted_by_a_column_given_as_its_header(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ("agent", "list", "-f", "value", "-c", "Host", "--sort-column", "Host")
    _, ascending, _ = run(capsys, *argv)
    _, descending, _ = run(capsys, *argv, "--sort-descending")
    assert ascending.split() == ["net-1", "net-2", "net-3", "net-4"]
    assert descending.split() == ["net-4", "net-3", "net-2", "net-1"]


def test_show_as_shell_variables(emulator: Emulator, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "agent", "show", "net-3", "-f", "shell", "--prefix", "agent_")
    assert code == 0, err
    variables = dict(line.split("=", 1) for line in out.splitlines())
    assert variables["agent_host"] == '"net-3"'
    assert variables["agent_alive"] == '"True"'
    assert "agent_hosted_routers" in variables


def test_fit_width_keeps_the_table_inside_max_width(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ("router", "list", "-c", "id", "-c", "agents", "-c", "agent_ids")
    _, wide, _ = run(capsys, *argv)
    _, narrow, _ = run(capsys, *argv, "--fit-width", "--max-width", "80")
    assert max(map(len, wide.splitlines())) > 80
    assert max(map(len, narrow.splitlines())) <= 80


@pytest.mark.parametrize(
    "argv",
    [
        ("agent", "list", "-f", "shell"),
        ("router", "show", "x", "-f", "csv"),
        ("probe", "--tcp", "127.0.0.1:1", "-f", "csv"),  # a document: table, json or yaml
    ],
)
def test_a_format_the_openstack_client_lacks_there_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    with pytest.raises(SystemExit) as done:
        main(list(argv))
    err = capsys.readouterr().err
    assert done.value.code == 2
    assert err.count("\n") == 1 and "argument -f/--format: invalid choice" in err, err


def test_history_sorts_by_a_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "history", "--state-dir", str(tmp_path), "--sort-column", "nope")
    assert (code, out) == (2, "")
    assert err.startswith("l3ha: error: unknown sort column nope; columns are: ")


def test_an_unknown_sort_column_is_one_line_and_exit_2(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "agent", "list", "--sort-column", "nope")
    assert (code, out) == (2, "")
    assert err.startswith("l3ha: error: unknown sort column nope; columns are: ")
    assert err.count("\n") == 1
