"""Table/JSON/YAML rendering and column selection shared by every list command."""

from __future__ import annotations

import io
import json

import pytest
import yaml

from l3ha.cli.output import emit
from l3ha.errors import BadInputError

ROWS = [
    {"host": "net-1", "alive": True, "routers": 3, "agents": ("a", "b")},
    {"host": "net-10", "alive": False, "routers": 12, "agents": ()},
]
KNOWN = ["host", "alive", "routers", "agents"]


def _render(fmt: str, columns: list[str] | None = None) -> str:
    out = io.StringIO()
    emit(ROWS, fmt, columns or [], KNOWN, stream=out)
    return out.getvalue()


def test_table_aligns_columns_and_renders_values() -> None:
    lines = _render("table").splitlines()
    assert lines[0].split() == ["HOST", "ALIVE", "ROUTERS", "AGENTS"]
    assert lines[1].split() == ["net-1", "yes", "3", "a,", "b"]
    assert lines[2].split() == ["net-10", "no", "12"]
    assert lines[1].index("yes") == lines[2].index("no")


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
