"""``l3ha history``: the journal's operations, their moves, one operation in full.
I/O: reads the journal (never creates one), writes to stdout.

A list shows one row per operation (what, on what, who started it, when, the
outcome, how its moves ended); ``--moves`` one row per move; ``history show
OPERATION`` one operation with its moves. A journal directory that does not
exist is bad input, for ``--state-dir`` and the default state dir alike.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from l3ha.cli.argtypes import positive_int
from l3ha.cli.common import add_state_dir_option
from l3ha.cli.output import (
    add_format_options,
    emit,
    emit_document,
    emit_record,
    list_columns,
)
from l3ha.errors import BadInputError
from l3ha.journal.history import (
    MOVE_COLUMNS,
    MOVE_ID_COLUMNS,
    MOVE_LONG_COLUMNS,
    OBJECT_COLUMNS,
    OPERATION_COLUMNS,
    move_row,
    operation_record,
)


def add_history_parser(sub: Any) -> None:
    """Register ``history`` (among the actions: ``l3ha --help`` lists it after them)."""
    p = sub.add_parser(
        "history",
        help="operations and moves from the journal",
        description="List the operations recorded in the journal, newest first, one row "
        "each (--moves: one row per move), or show one operation with its moves "
        "('history show OPERATION').",
    )
    p.add_argument("show", nargs="?", choices=["show"], help="show one operation")
    p.add_argument("operation", nargs="?", type=positive_int, help="the operation to show")
    p.add_argument("--last", type=positive_int, metavar="N", help="only the last N operations")
    p.add_argument("--moves", action="store_true", help="one row per move of the operations")
    add_state_dir_option(p, existing=True)
    add_format_options(p, long=True)
    p.set_defaults(func=run_history)


def journal_dir(args: argparse.Namespace) -> Path:
    """The journal directory to read; bad input when it does not exist."""
    from l3ha.journal import STATE_DIR_ENV, default_state_dir

    state_dir = getattr(args, "state_dir", None)
    if state_dir:
        return Path(state_dir)  # checked by the option's type
    path = default_state_dir()
    if not path.is_dir():
        raise BadInputError(
            f"no journal directory {path}: give --state-dir DIR or set {STATE_DIR_ENV}"
        )
    return path


def run_history(args: argparse.Namespace) -> int:
    """List operations or moves, or show one operation; the exit code."""
    from l3ha.journal import DB_NAME, Journal

    if args.show and args.operation is None:
        raise BadInputError("history show needs an OPERATION (a number from 'l3ha history')")
    state_dir = journal_dir(args)
    if not (state_dir / DB_NAME).exists():  # reading history never creates a journal
        if args.show:
            raise BadInputError(f"no operation {args.operation}: no journal in {state_dir} yet")
        emit([], args.format, args.column, list(OPERATION_COLUMNS), options=args)
        return 0
    with Journal(state_dir) as journal:
        if args.show:
            return _show(journal, args)
        rows = journal.history_rows(args.last) if args.moves else journal.operation_rows(args.last)
    columns = _list_columns(args, rows)
    emit(
        rows, args.format, columns, _move_keys(rows, True) if args.moves else columns, options=args
    )
    return 0


def _list_columns(args: argparse.Namespace, rows: list[dict[str, object]]) -> list[str]:
    """The columns every row may have; ``-c``, or ``--long`` (ids) choose among them."""
    if not args.moves:
        return list(OPERATION_COLUMNS)
    known = _move_keys(rows, with_ids=True)
    return list_columns(args, [c for c in known if c not in MOVE_LONG_COLUMNS], known)


def _show(journal: Any, args: argparse.Namespace) -> int:
    op = journal.operation(args.operation)
    moves = [move_row(op, mv) for mv in journal.moves(op.id)]
    counts = Counter(str(row["outcome"] or row["step"]) for row in moves)
    record = operation_record(op, counts)
    if args.format in ("json", "yaml"):
        emit_document({**record, "move_list": moves}, args.format)
        return 0
    if args.format == "table":
        table = {**record, "arguments": json.dumps(record["arguments"], sort_keys=True)}
        emit_record(table, "table", args.column, options=args)
        if moves:
            sys.stdout.write("\n")
    if moves or args.format != "table":
        shown = [c for c in _move_keys(moves) if c not in MOVE_LONG_COLUMNS]
        emit(moves, args.format, (), shown)
    return 0


def _move_keys(moves: list[dict[str, object]], with_ids: bool = False) -> list[str]:
    """The move columns: ``network`` only when there are DHCP moves, ``gateway`` only when
    there are OVN gateway moves, ``router`` only when there are router moves (or no
    moves); ``with_ids``: the id columns too."""
    kinds = {next(c for c in OBJECT_COLUMNS if c in r) for r in moves} or {"router"}
    columns = [*MOVE_COLUMNS, *(MOVE_ID_COLUMNS if with_ids else ())]
    return [c for c in columns if c.removesuffix("_id") not in set(OBJECT_COLUMNS) - kinds]
