"""The ``l3ha`` entry point: builds the argument parser and turns errors into exit codes.

I/O: reads argv, writes to stdout/stderr, and reads the journal (SQLite in the state
directory) to note an operation a crash cut short. Every module in ``l3ha.cli`` that
defines ``register(subparsers)`` contributes its commands; each command sets
``func`` (taking the parsed namespace, returning an exit code). Modules import
heavy libraries inside their command functions, so ``l3ha --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys
from collections.abc import Sequence

import l3ha.cli
from l3ha import __version__
from l3ha.errors import L3haError

PROG = "l3ha"


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line and exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message} (see '{self.prog} --help')\n")
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    """The full parser with every registered command."""
    parser = _Parser(
        prog=PROG,
        description=(
            "Keep OpenStack Neutron routers reachable through L3 agent failures, "
            "control-plane outages and maintenance."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=_Parser)
    for info in sorted(pkgutil.iter_modules(l3ha.cli.__path__), key=lambda m: m.name):
        if info.name == "main":
            continue
        module = importlib.import_module(f"l3ha.cli.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    return parser


def _notice_interrupted(state_dir: str | None) -> None:
    """Say so when the journal holds an operation a crash cut short."""
    import sqlite3
    from pathlib import Path

    from l3ha.journal import default_state_dir, interrupted_operations

    try:
        ops = interrupted_operations(Path(state_dir) if state_dir else default_state_dir())
    except sqlite3.Error:
        return
    for op in ops:
        command = "dhcp repair" if op.kind.startswith("dhcp-") else "repair"
        sys.stderr.write(
            f"{PROG}: note: operation {op.id} ({op.kind}, started {op.started}) was interrupted; "
            f"'{PROG} {command}' finishes it from the cloud's actual state\n"
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit code (also used as the process exit code)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        if not getattr(args, "finishes_interrupted", False):
            _notice_interrupted(getattr(args, "state_dir", None))
        code = func(args)
    except L3haError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        return 130
    return int(code or 0)


def run() -> None:
    """Console-script wrapper."""
    sys.exit(main())


if __name__ == "__main__":
    run()
