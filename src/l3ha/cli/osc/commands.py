"""The ``openstack l3ha ...`` commands: l3ha's own commands run inside the ``openstack``
client. I/O: whatever the l3ha command does (reads and changes the cloud, prints).

Each command takes the options of the l3ha command of the same name (from l3ha's own
parser, which adds the cloud options the ``openstack`` client already has, ``--os-*``,
``--insecure``, ``--timeout`` ..., only to a command ``l3ha`` itself runs), and runs the
same handler with the ``openstack`` client's authenticated SDK connection; so the flow,
the output formats and the exit codes are l3ha's. A usage error (a bad option, a bad
value) and an l3ha error (an unknown agent, an ambiguous name ...) are one line on stderr
and the exit code ``l3ha`` gives; an interrupted operation in the journal gets the note
``l3ha`` prints.
"""

from __future__ import annotations

import argparse
import functools
import sys
from typing import Any

from cliff import _argparse
from cliff.command import Command

from l3ha.cli.common import CONNECTION_ATTR
from l3ha.cli.help import command_parser
from l3ha.cli.main import OneLineErrors, build_parser, run_handler

PROG = "openstack l3ha"


class _Parser(OneLineErrors, _argparse.ArgumentParser):
    """cliff's parser of a command, with l3ha's one-line usage errors and exit codes."""


@functools.cache
def _l3ha_parser() -> argparse.ArgumentParser:
    return build_parser()


def l3ha_subparser(path: tuple[str, ...]) -> argparse.ArgumentParser:
    """The parser of ``l3ha PATH...`` (``("agent", "list")``)."""
    return command_parser(_l3ha_parser(), list(path))


def copy_arguments(source: argparse.ArgumentParser, target: argparse.ArgumentParser) -> None:
    """Add ``source``'s arguments (less help) to ``target``.

    ``source`` is never parsed, so it lacks the ``openstack`` client's options that l3ha's
    parsers add to the command being run: the ``openstack`` client has its own."""
    for group in source._action_groups:
        wanted = [a for a in group._group_actions if not isinstance(a, argparse._HelpAction)]
        if not wanted:
            continue
        existing = {g.title: g for g in target._action_groups}
        into = existing.get(group.title) or target.add_argument_group(
            group.title, group.description
        )
        for action in wanted:
            into._add_action(action)
    target.set_defaults(**source._defaults)


class L3haCommand(Command):
    """An l3ha command (``path``) inside the ``openstack`` client."""

    path: tuple[str, ...] = ()
    auth_required = True

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        source = l3ha_subparser(self.path)
        parser = super().get_parser(prog_name)
        parser.__class__ = _Parser  # cliff builds it; l3ha's usage errors are one line
        code = getattr(source, "usage_error_code", _Parser.usage_error_code)
        setattr(parser, "usage_error_code", code)  # noqa: B010 (mypy sees cliff's class)
        parser.description = source.description
        copy_arguments(source, parser)
        return parser

    def get_description(self) -> str:
        return str(l3ha_subparser(self.path).description or "")

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        setattr(parsed_args, CONNECTION_ATTR, self._connection)
        try:
            return run_handler(parsed_args, PROG)
        except KeyboardInterrupt as exc:  # how far it got and what to run next, as l3ha says
            sys.stderr.write(f"{PROG}: {str(exc) or 'interrupted'}\n")
            return 130

    def _connection(self) -> Any:
        app: Any = self.app  # the openstack client's (osc-lib) app has a client manager
        return app.client_manager.sdk_connection


def l3ha_command(*path: str, auth: bool = True) -> type[L3haCommand]:
    """The ``openstack l3ha PATH...`` command class."""
    name = "".join(part.capitalize() for part in path)
    return type(name, (L3haCommand,), {"path": path, "auth_required": auth, "__doc__": None})


AgentList = l3ha_command("agent", "list")
AgentShow = l3ha_command("agent", "show")
RouterList = l3ha_command("router", "list")
RouterShow = l3ha_command("router", "show")
Evacuate = l3ha_command("evacuate")
Drain = l3ha_command("drain")
Undrain = l3ha_command("undrain")
Migrate = l3ha_command("migrate")
Rebalance = l3ha_command("rebalance")
Repair = l3ha_command("repair")
Check = l3ha_command("check")
History = l3ha_command("history", auth=False)
SnapshotSave = l3ha_command("snapshot", "save")
HaAudit = l3ha_command("ha", "audit")
HaRepair = l3ha_command("ha", "repair")
DhcpAudit = l3ha_command("dhcp", "audit")
DhcpEvacuate = l3ha_command("dhcp", "evacuate")
DhcpDrain = l3ha_command("dhcp", "drain")
DhcpUndrain = l3ha_command("dhcp", "undrain")
DhcpRepair = l3ha_command("dhcp", "repair")
