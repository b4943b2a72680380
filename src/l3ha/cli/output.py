"""Rendering rows and records: ``-f table|json|yaml``, ``-c COLUMN``. I/O: writes to a stream.

Commands build a list of rows (dicts with the same keys, in column order) and
call ``emit``. Tables are plain text with aligned columns; JSON and YAML give
the same rows as data, so scripts never parse tables.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import yaml

from l3ha.errors import BadInputError, candidates_text

FORMATS = ("table", "json", "yaml")

Row = Mapping[str, Any]


def add_format_options(parser: argparse.ArgumentParser, columns: bool = True) -> None:
    """Add ``-f/--format`` and (for lists) ``-c/--column``."""
    parser.add_argument(
        "-f", "--format", choices=FORMATS, default="table", help="output format (default: table)"
    )
    if columns:
        parser.add_argument(
            "-c",
            "--column",
            action="append",
            default=[],
            metavar="COLUMN",
            help="show only this column (repeatable)",
        )


def select_columns(rows: Sequence[Row], columns: Sequence[str], known: Sequence[str]) -> list[str]:
    """The columns to show; an unknown name is a one-line error listing the known ones."""
    if not columns:
        return list(known)
    by_name = {k.lower(): k for k in known}  # table headers are upper case: accept either
    unknown = [c for c in columns if c.lower() not in by_name]
    if unknown:
        raise BadInputError(
            f"unknown column {', '.join(unknown)}; columns are: {candidates_text(known, 40)}"
        )
    return [by_name[c.lower()] for c in columns]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.1f}"
    if isinstance(value, list | tuple):
        return ", ".join(_cell(v) for v in value)
    return str(value)


def render_table(rows: Sequence[Row], columns: Sequence[str]) -> str:
    """Aligned plain-text table with a header line."""
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines) + "\n"


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, str):
        return str(value)  # StrEnum -> plain str
    return value


def emit(
    rows: Sequence[Row],
    fmt: str,
    columns: Sequence[str] = (),
    known: Sequence[str] | None = None,
    stream: TextIO | None = None,
) -> None:
    """Write rows in the chosen format, restricted to ``columns`` when given."""
    out = stream or sys.stdout
    known_cols = list(known) if known is not None else (list(rows[0].keys()) if rows else [])
    shown = select_columns(rows, columns, known_cols)
    data = [{c: _plain(row.get(c)) for c in shown} for row in rows]
    if fmt == "json":
        out.write(json.dumps(data, indent=2, sort_keys=False) + "\n")
    elif fmt == "yaml":
        out.write(yaml.safe_dump(data, sort_keys=False, default_flow_style=False))
    else:
        out.write(render_table(data, shown))


def emit_record(
    record: Row,
    fmt: str,
    columns: Sequence[str] = (),
    stream: TextIO | None = None,
) -> None:
    """Write one object (a ``show``): a FIELD/VALUE table, or a JSON/YAML mapping;
    restricted to ``columns`` (its field names) when given."""
    shown = select_columns([record], columns, list(record.keys()))
    data = {field: _plain(record.get(field)) for field in shown}
    if fmt in ("json", "yaml"):
        emit_document(data, fmt, stream)
        return
    rows = [{"field": field, "value": value} for field, value in data.items()]
    (stream or sys.stdout).write(render_table(rows, ["field", "value"]))


def name_matches(name: str, patterns: Sequence[str]) -> bool:
    """``--name``: any of the exact names or shell patterns (``net-*``); none given: all."""
    from fnmatch import fnmatchcase

    return not patterns or any(fnmatchcase(name, pattern) for pattern in patterns)


def add_name_filter(parser: argparse.ArgumentParser, what: str) -> None:
    """``--name NAME`` (repeatable): only the objects whose ``what`` is one of them."""
    parser.add_argument(
        "--name",
        action="append",
        default=[],
        metavar="NAME",
        help=f"only {what} NAME (exact, or a shell pattern such as 'net-*'; repeatable)",
    )


def emit_document(doc: Mapping[str, Any], fmt: str, stream: TextIO | None = None) -> None:
    """Write one structured result (not a list of rows) as JSON or YAML."""
    out = stream or sys.stdout
    if fmt == "yaml":
        out.write(yaml.safe_dump(_plain(doc), sort_keys=False, default_flow_style=False))
    else:
        out.write(json.dumps(_plain(doc), indent=2) + "\n")
