"""Rendering rows and records with cliff's formatters, as the ``openstack`` client does.
I/O: writes to a stream.

Lists take ``-f table|csv|json|value|yaml``, shows ``-f table|json|shell|value|yaml``
(the ``openstack`` client's sets), both ``-c COLUMN``; lists also ``--sort-column``,
``--sort-ascending|--sort-descending`` and (when they hide columns by default)
``--long``; cliff's own formatter options come along (``--fit-width``,
``--max-width``, ``--print-empty``, ``--noindent``, ``--quote``, ``--prefix``).

Commands build rows (dicts keyed by stable lower-case names such as ``host``,
``routers``, ``admin_state``) and call ``emit`` or ``emit_record``. The table
view shows headers as an ``openstack`` user reads them (``Host``, ``ID``,
``Admin State``); every machine-readable format keeps the keys, so scripts never
depend on the headers. ``-c`` and ``--sort-column`` accept either spelling.
Documents that are not rows (plans, results) go through ``emit_document``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

import yaml
from cliff.columns import FormattableColumn
from cliff.formatters.base import Formatter, ListFormatter, SingleFormatter
from cliff.formatters.commaseparated import CSVLister
from cliff.formatters.json_format import JSONFormatter
from cliff.formatters.shell import ShellFormatter
from cliff.formatters.table import TableFormatter
from cliff.formatters.value import ValueFormatter
from cliff.formatters.yaml_format import YAMLFormatter

from l3ha.errors import BadInputError, candidates_text

#: Formats of commands that print one document (plans, results), not rows.
FORMATS = ("table", "json", "yaml")
LIST_FORMATTERS: dict[str, type[ListFormatter]] = {
    "table": TableFormatter,
    "csv": CSVLister,
    "json": JSONFormatter,
    "value": ValueFormatter,
    "yaml": YAMLFormatter,
}
SHOW_FORMATTERS: dict[str, type[SingleFormatter]] = {
    "table": TableFormatter,
    "json": JSONFormatter,
    "shell": ShellFormatter,
    "value": ValueFormatter,
    "yaml": YAMLFormatter,
}
#: Words the table headers spell as ``openstack`` does.
_HEADER_WORDS = {"id": "ID", "ids": "IDs", "ha": "HA", "az": "AZ", "ip": "IP", "dhcp": "DHCP"}

Row = Mapping[str, Any]


class ListValue(FormattableColumn[list[Any]]):
    """A list cell: ``a, b`` in a table, a list in JSON/YAML."""

    def human_readable(self) -> str:
        return ", ".join(str(v) for v in self._value)


def header(key: str) -> str:
    """The table header of a row key: ``admin_state`` -> ``Admin State``, ``id`` -> ``ID``."""
    return " ".join(_HEADER_WORDS.get(w, w.capitalize()) for w in key.split("_"))


def add_format_options(
    parser: argparse.ArgumentParser, columns: bool = True, *, show: bool = False, long: bool = False
) -> None:
    """Output options: a list's (default), a show's (``show``), or a document's (not
    ``columns``: ``-f table|json|yaml`` only). ``long``: the list hides columns by default."""
    formatters: Mapping[str, type[Formatter]] = SHOW_FORMATTERS if show else LIST_FORMATTERS
    group = parser.add_argument_group("output formatters") if columns else parser
    group.add_argument(
        "-f",
        "--format",
        choices=tuple(formatters) if columns else FORMATS,
        default="table",
        help="output format (default: table)",
    )
    if not columns:
        return
    add_column_option(group)
    if not show:
        _add_sort_options(group, long)
    for formatter in formatters.values():
        formatter().add_argument_group(parser)


def add_document_format_options(parser: argparse.ArgumentParser) -> None:
    """``-f table|json|yaml`` and ``-c COLUMN`` for a command printing one document whose
    table view is a list of rows (``l3ha probe``'s summary)."""
    add_format_options(parser, columns=False)
    add_column_option(parser)


def add_column_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``-c/--column COLUMN`` (repeatable)."""
    parser.add_argument(
        "-c",
        "--column",
        action="append",
        default=[],
        metavar="COLUMN",
        help="show only this column, by key or header (repeatable)",
    )


def _add_sort_options(group: argparse.ArgumentParser | argparse._ArgumentGroup, long: bool) -> None:
    if long:
        group.add_argument("--long", action="store_true", help="show every column")
    group.add_argument(
        "--sort-column",
        action="append",
        default=[],
        dest="sort_columns",
        metavar="SORT_COLUMN",
        help="sort by this column, by key or header (repeatable, first has priority)",
    )
    direction = group.add_mutually_exclusive_group()
    direction.add_argument(
        "--sort-ascending", action="store_const", dest="sort_direction", const="asc"
    )
    direction.add_argument(
        "--sort-descending",
        action="store_const",
        dest="sort_direction",
        const="desc",
        help="sort order (default: ascending)",
    )


def list_columns(
    args: argparse.Namespace, default: Sequence[str], every: Sequence[str]
) -> list[str]:
    """The columns a list shows: ``-c`` if given, every one with ``--long``, else ``default``."""
    if args.column:
        return list(args.column)
    return list(every if getattr(args, "long", False) else default)


def select_columns(columns: Sequence[str], known: Sequence[str]) -> list[str]:
    """The columns to show; an unknown name is a one-line error listing the known ones."""
    if not columns:
        return list(known)
    return [_column_key(c, known, "column") for c in columns]


def _column_key(name: str, known: Sequence[str], what: str) -> str:
    by_name = {_normal(k): k for k in known} | {_normal(header(k)): k for k in known}
    key = by_name.get(_normal(name))
    if key is None:
        raise BadInputError(f"unknown {what} {name}; columns are: {candidates_text(known, 40)}")
    return key


def _normal(name: str) -> str:
    return name.lower().replace(" ", "_")


def _plain(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, str):
        return str(value)  # StrEnum -> plain str
    return value


def _cell(value: Any) -> Any:
    plain = _plain(value)
    return ListValue(plain) if isinstance(plain, list) else plain


def _sorted(rows: Sequence[Row], options: argparse.Namespace, known: Sequence[str]) -> list[Row]:
    keys = [_column_key(c, known, "sort column") for c in getattr(options, "sort_columns", [])]
    ordered = list(rows)
    reverse = getattr(options, "sort_direction", None) == "desc"
    for key in reversed(keys):  # stable sorts, last priority first; None sorts first
        try:
            ordered.sort(key=_sort_key(key, as_text=False), reverse=reverse)
        except TypeError:  # mixed types in one column: compare as text
            ordered.sort(key=_sort_key(key, as_text=True), reverse=reverse)
    return ordered


def _sort_key(key: str, as_text: bool) -> Callable[[Row], tuple[bool, Any]]:
    return lambda row: _sort_value(row.get(key), as_text)


def _sort_value(value: Any, as_text: bool) -> tuple[bool, Any]:
    if value is None:
        return (False, "")
    if isinstance(value, list | tuple):
        return (True, ", ".join(map(str, value)))
    return (True, str(value) if as_text else value)


def _formatter_args(options: argparse.Namespace | None) -> argparse.Namespace:
    """cliff's formatter options: their defaults, overridden by the parsed ones."""
    defaults = argparse.ArgumentParser(add_help=False)
    for formatter in {*LIST_FORMATTERS.values(), *SHOW_FORMATTERS.values()}:
        formatter().add_argument_group(defaults)
    args = defaults.parse_args([])
    for name in vars(args):
        if options is not None and hasattr(options, name):
            setattr(args, name, getattr(options, name))
    return args


def emit(
    rows: Sequence[Row],
    fmt: str,
    columns: Sequence[str] = (),
    known: Sequence[str] | None = None,
    stream: TextIO | None = None,
    *,
    options: argparse.Namespace | None = None,
) -> None:
    """Write rows in format ``fmt``, restricted to ``columns`` when given; ``options``:
    the parsed sort and formatter options (``--sort-column``, ``--fit-width`` ...)."""
    known_cols = list(known) if known is not None else (list(rows[0].keys()) if rows else [])
    shown = select_columns(columns, known_cols)
    ordered = _sorted(rows, options, known_cols) if options is not None else list(rows)
    data = [[_cell(row.get(c)) for c in shown] for row in ordered]
    names = [header(c) for c in shown] if fmt == "table" else shown
    formatter = LIST_FORMATTERS[fmt]()
    formatter.emit_list(names, data, stream or sys.stdout, _formatter_args(options))


def emit_record(
    record: Row,
    fmt: str,
    columns: Sequence[str] = (),
    stream: TextIO | None = None,
    *,
    options: argparse.Namespace | None = None,
) -> None:
    """Write one object (a ``show``): a Field/Value table, or a JSON/YAML mapping, shell
    variables or bare values; restricted to ``columns`` (its field names) when given."""
    shown = select_columns(columns, list(record.keys()))
    data = [_cell(record.get(field)) for field in shown]
    names = [header(c) for c in shown] if fmt == "table" else shown
    formatter = SHOW_FORMATTERS[fmt]()
    formatter.emit_one(names, data, stream or sys.stdout, _formatter_args(options))


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
