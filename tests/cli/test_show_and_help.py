"""``l3ha agent show``, ``router show``, the ``--name`` filters and ``l3ha help``, in-process
against the emulator."""

from __future__ import annotations

import json

import pytest

from l3ha.cli.main import main
from l3ha.cloud.adapter import connect
from l3ha.emulator import Emulator
from l3ha.emulator.server import CLOUD_NAME as CLOUD


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str) -> str:
    assert err.count("\n") == 1 and err.startswith("l3ha: error: "), err
    return err


def test_agent_show_has_the_list_row_the_description_and_the_routers_by_name(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = connect(CLOUD).read_snapshot()
    agent = snap.find_agent("net-2")
    hosted = sorted(snap.routers_by_id[b.router_id].name for b in snap.bindings_of_agent(agent.id))
    code, out, err = run(capsys, "agent", "show", agent.id[:8], "-f", "json")
    assert code == 0, err
    shown = json.loads(out)
    _, listed, _ = run(capsys, "agent", "list", "-f", "json", "--name", "net-2")
    (row,) = json.loads(listed)
    assert {k: shown[k] for k in row if k != "heartbeat_age"} == {
        k: v for k, v in row.items() if k != "heartbeat_age"
    }
    assert shown["host"] == "net-2" and shown["id"] == agent.id
    assert shown["hosted_routers"] == hosted and len(hosted) == shown["routers"]
    assert "description" in shown


def test_agent_show_table_is_field_and_value(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "agent", "show", "net-1", "-c", "host", "-c", "mode")
    assert code == 0
    assert [line.split() for line in out.splitlines() if line.startswith("|")] == [
        ["|", "Field", "|", "Value", "|"],
        ["|", "Host", "|", "net-1", "|"],
        ["|", "Mode", "|", "legacy", "|"],
    ]


def test_router_show_by_name_has_every_list_column_and_the_ha_state(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = connect(CLOUD).read_snapshot()
    ha = next(r for r in snap.routers if r.ha)
    code, out, err = run(capsys, "router", "show", ha.name, "-f", "yaml")
    assert code == 0, err
    assert f"id: {ha.id}" in out and "ha: true" in out and "project_id:" in out
    assert "(active)" in out or "(standby)" in out
    code, out, err = run(capsys, "router", "show", ha.id, "-f", "json", "-c", "name")
    assert (code, json.loads(out)) == (0, {"name": ha.name})


def test_show_of_an_unknown_object_or_field_is_one_line_and_exit_2(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "router", "show", "no-such-router")
    assert code == 2 and "no router with id, name or id prefix 'no-such-router'" in one_line_error(
        err
    )
    code, _, err = run(capsys, "agent", "show", "net-9")
    assert code == 2 and "no L3 agent with host or id 'net-9'" in one_line_error(err)
    code, _, err = run(capsys, "agent", "show", "net-1", "-c", "colour")
    assert code == 2 and "unknown column colour" in one_line_error(err)


def test_name_filters_take_exact_names_and_shell_patterns(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = run(capsys, "router", "list", "-f", "json", "--name", "router-001?")
    assert sorted(r["name"] for r in json.loads(out)) == [f"router-001{n}" for n in range(10)]
    _, out, _ = run(
        capsys, "router", "list", "-f", "json", "--name", "router-0001", "--name", "router-0020"
    )
    assert sorted(r["name"] for r in json.loads(out)) == ["router-0001", "router-0020"]
    _, out, _ = run(capsys, "agent", "list", "-f", "json", "--name", "net-[13]")
    assert [r["host"] for r in json.loads(out)] == ["net-1", "net-3"]
    _, out, _ = run(capsys, "agent", "list", "-f", "json", "--name", "net")
    assert json.loads(out) == []  # exact, not a substring


def test_help_prints_the_commands_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["agent", "show", "--help"])
    expected = capsys.readouterr().out
    code, out, _ = run(capsys, "help", "agent", "show")
    assert (code, out) == (0, expected)
    assert out.startswith("usage: l3ha agent show ")
    code, out, _ = run(capsys, "help")
    assert code == 0 and out.startswith("usage: l3ha ")


def test_help_of_an_unknown_command_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "help", "agent", "lst")
    assert (code, out) == (2, "")
    assert "unknown command 'agent lst'" in one_line_error(err)
    assert "list, show" in err
    code, _, err = run(capsys, "help", "check", "more")
    assert code == 2 and "'l3ha check' has no subcommands" in one_line_error(err)
