"""``l3ha help [COMMAND...]``: the help of a command, as ``l3ha COMMAND --help``. I/O: stdout.

Like ``openstack help``: ``l3ha help agent list`` prints what ``l3ha agent list
--help`` prints, ``l3ha help`` the list of commands. An unknown command is a
one-line error naming the commands there are, exit 2.
"""

from __future__ import annotations

import argparse
from typing import Any

from l3ha.errors import BadInputError, candidates_text


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommands of ``parser`` by name (empty for a command that has none)."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def command_parser(root: argparse.ArgumentParser, words: list[str]) -> argparse.ArgumentParser:
    """The parser of the command ``words`` names under ``root`` (``BadInputError`` if none)."""
    parser = root
    for depth, word in enumerate(words):
        known = subcommands(parser)
        if word not in known:
            where = " ".join(["l3ha", *words[:depth]])
            if not known:
                raise BadInputError(f"'{where}' has no subcommands (no '{word}')")
            raise BadInputError(
                f"unknown command '{' '.join(words[: depth + 1])}'; the commands of '{where}' "
                f"are: {candidates_text(sorted(known), 40)}"
            )
        parser = known[word]
    return parser


def show_help(args: argparse.Namespace) -> int:
    """Handler of ``l3ha help``."""
    from l3ha.cli.main import build_parser

    command_parser(build_parser(), list(args.command)).print_help()
    return 0


def register(subparsers: Any) -> None:
    """Add ``l3ha help``."""
    parser = subparsers.add_parser(
        "help",
        help="print the help of a command ('l3ha help agent list')",
        description="Print the help of a command, as 'l3ha COMMAND... --help' does; "
        "without a command, the list of commands.",
    )
    parser.add_argument("command", nargs="*", metavar="COMMAND", help="a command and subcommand")
    parser.set_defaults(func=show_help)
