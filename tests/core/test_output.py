"""Rendering through cliff's formatters (table, csv, json, value, yaml; shell for a
record), column selection and sorting, shared by every list and show command."""

from __future__ import annotations

import argparse
import io
import json

import pytest
import yaml

from l3ha.cli.output import add_format_options, emit, emit_record, header
from l3ha.errors import BadInputError

ROWS = [
    {"host": "net-1", "alive": True, "routers": 3, "agents": ("a", "b")},
    {"host": "net-10", "alive": False, "routers": 12, "agents": ()},
]
KNOWN = ["host", "alive", "routers", "agents"]


def _render(fmt: str, columns: list[str] | None = None, *argv: str) -> str:
    parser = argparse.ArgumentParser()
    add_format_options(parser, long=True)
    out = io.StringIO()
    emit(ROWS, fmt, columns or [], KNOWN, stream=out, options=parser.parse_args(list(argv)))
    return out.getvalue()


def _cells(table: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in table.splitlines()
        if line.startswith("|")
    ]


def test_table_is_openstack_style_with_headers_and_human_values() -> None:
    table = _render("table")
    assert table.splitlines()[0].startswith("+-")
    assert _cells(table) == [
        ["Host", "Alive", "Routers", "Agents"],
        ["net-1", "True", "3", "a, b"],
        ["net-10", "False", "12", ""],
    ]


def test_headers_spell_abbreviations_as_openstack_does() -> None:
    assert [header(k) for k in ("id", "admin_state", "agent_ids", "az_hints", "ha")] == [
        "ID", "Admin State", "Agent IDs", "AZ Hints", "HA",
    ]  # fmt: skip


def test_csv_and_value_keep_the_keys_and_machine_values() -> None:
    assert _render("csv").splitlines() == [
        '"host","alive","routers","agents"',
        "\"net-1\",True,3,\"['a', 'b']\"",
        '"net-10",False,12,"[]"',
    ]
    assert _render("value", ["host", "routers"]).splitlines() == ["net-1 3", "net-10 12"]


def test_sort_column_by_key_or_header_and_direction() -> None:
    descending = _render("value", ["host"], "--sort-column", "Routers", "--sort-descending")
    assert descending.split() == ["net-10", "net-1"]
    ascending = _render("value", ["host"], "--sort-column", "agents")
    assert ascending.split() == ["net-10", "net-1"]  # "" before "a, b"


def test_unknown_sort_column_is_a_one_line_error() -> None:
    with pytest.raises(
        BadInputError, match="unknown sort column nope; columns are: agents, alive, host"
    ):
        _render("json", [], "--sort-column", "nope")


def test_record_as_shell_variables_and_field_value_table() -> None:
    record = {"host": "net-1", "hosted_routers": ["r1", "r2"], "alive": True}
    out = io.StringIO()
    emit_record(record, "shell", stream=out)
    assert out.getvalue().splitlines() == [
        'host="net-1"',
        "hosted_routers=\"['r1', 'r2']\"",
        'alive="True"',
    ]
    out = io.StringIO()
    emit_record(record, "table", ["hosted_routers"], stream=out)
    assert _cells(out.getvalue()) == [["Field", "Value"], ["Hosted Routers", "r1, r2"]]


def test_json_and_yaml_carry_the_same_data() -> None:
    from_json = json.loads(_render("json"))
    from_yaml = yaml.safe_load(_render("yaml"))
    assert from_json == from_yaml
    assert from_json[0] == {"host": "net-1", "alive": True, "routers": 3, "agents": ["a", "b"]}


def test_columns_select_and_order() -> None:
    data = json.loads(_render("json", ["routers", "host"]))
    assert data == [{"routers": 3, "host": "net-1"}, {"routers": 12, "host": "net-10"}]


def test_unknown_column_is_a_one_line_error_listing_known_ones() -> None:
    with pytest.raises(BadInputError) as err:
        _render("table", ["nope"])
    assert "unknown column nope" in str(err.value)
    assert "host" in str(err.value)


def test_columns_may_be_named_as_the_table_headers_show_them() -> None:
    data = json.loads(_render("json", ["HOST", "Routers"]))
    assert data[0] == {"host": "net-1", "routers": 3}
