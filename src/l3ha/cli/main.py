"""The ``l3ha`` entry point: builds the argument parser and turns errors into exit codes.

I/O: reads argv, writes to stdout/stderr, and reads the journal (SQLite in the state
directory) to note an operation a crash cut short. Every module in ``l3ha.cli`` that
defines ``register(subparsers)`` contributes its commands; each command sets
``func`` (taking the parsed namespace, returning an exit code). Modules import
heavy libraries inside their command functions, and a cloud command's ``--os-*``
options (openstacksdk's) are built only when that command runs or shows its help
(``LazyOptionsParser``), so ``l3ha --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys
from collections.abc import Sequence
from typing import Any

import l3ha.cli
from l3ha import __version__
from l3ha.cli.common import LazyOptionsParser, state_dir
from l3ha.errors import L3haError

PROG = "l3ha"
EXIT_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a writer whose reader left


class OneLineErrors(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line and exit 2 (a command may choose
    another code: ``usage_error_code`` on its parser and in its defaults)."""

    usage_error_code = 2

    def error(self, message: str) -> None:  # type: ignore[override]
        self._fail(message, self.usage_error_code)

    def _fail(self, message: str, code: int) -> None:
        sys.stderr.write(f"{self.prog}: error: {message} (see '{self.prog} --help')\n")
        sys.exit(code)

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        """As argparse's, with the command's usage error code for unknown arguments."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            code = getattr(parsed, "usage_error_code", self.usage_error_code)
            self._fail(f"unrecognized arguments: {' '.join(extras)}", code)
        return parsed


class _Parser(OneLineErrors, LazyOptionsParser):
    """l3ha's parsers: one-line usage errors; costly options only on the command run."""


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
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="more logging: every Neutron API request (method, path, status, ms); -vv: all",
    )
    parser.add_argument(
        "--debug", action="store_true", help="all debug logging (as -vv), API requests included"
    )
    sub = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=_Parser)
    for info in sorted(pkgutil.iter_modules(l3ha.cli.__path__), key=lambda m: m.name):
        if info.name == "main":
            continue
        module = importlib.import_module(f"l3ha.cli.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    return parser


def notice_interrupted(args: argparse.Namespace, prog: str) -> None:
    """Say so when the journal holds an operation a crash cut short (``prog``: the command
    the note tells to run, ``openstack l3ha`` in the ``openstack`` client)."""
    import sqlite3

    from l3ha.journal import interrupted_operations

    try:
        ops = interrupted_operations(state_dir(args))
    except sqlite3.Error:
        return
    for op in ops:
        command = "dhcp repair" if op.kind.startswith("dhcp-") else "repair"
        sys.stderr.write(
            f"{prog}: note: operation {op.id} ({op.kind}, started {op.started}) was interrupted; "
            f"'{prog} {command}' finishes it from the cloud's actual state\n"
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit code (also used as the process exit code).

    When stdout's reader goes away (``l3ha ... | head``) the command ends
    quietly with ``EXIT_PIPE``, never a traceback."""
    try:
        try:
            return _run_command(argv)
        finally:
            sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
    except BrokenPipeError:
        return _reader_gone()


def _run_command(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_logging(args.verbose + 2 * args.debug)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return run_handler(args, PROG)
    except KeyboardInterrupt as exc:  # on a line of its own, after any progress bar
        detail = str(exc) or "interrupted"
        sys.stderr.write(f"\n{PROG}: {detail}\n" if sys.stderr.isatty() else f"{PROG}: {detail}\n")
        return 130


def run_handler(args: argparse.Namespace, prog: str) -> int:
    """Run the parsed command (``prog``: how errors and notes name it): first the note of
    an interrupted operation, an l3ha error as one line and its exit code; Ctrl-C is the
    caller's."""
    try:
        if not getattr(args, "finishes_interrupted", False):
            notice_interrupted(args, prog)
        return int(args.func(args) or 0)
    except L3haError as exc:
        sys.stderr.write(f"{prog}: error: {exc}\n")
        return exc.exit_code


def _configure_logging(verbosity: int) -> None:
    """Warnings only; ``-v``: info and each API request (``l3ha.api``); ``-vv``: debug."""
    logging.basicConfig(
        level=logging.WARNING - 10 * min(verbosity, 2),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # Set on every call: a second command in the same process (tests, the OSC plugin)
    # must not inherit an earlier ``-v``.
    logging.getLogger("l3ha.api").setLevel(logging.DEBUG if verbosity else logging.NOTSET)


def _reader_gone() -> int:
    """stdout's reader went away (``l3ha ... | head``): end quietly, as a killed ``cat`` does."""
    import os

    try:
        target = sys.stdout.fileno()
    except (OSError, ValueError):  # not a real file (captured): nothing to flush at exit
        return EXIT_PIPE
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, target)  # the final flush at exit must not fail again
    os.close(devnull)
    return EXIT_PIPE


def run() -> None:
    """Console-script wrapper."""
    sys.exit(main())


if __name__ == "__main__":
    run()
