"""The ``openstack`` client's cloud options (built by openstacksdk, whose import is most of
``l3ha``'s start-up) are added only to the command being run, and only if it talks to a
cloud: ``l3ha --help`` and ``l3ha history`` never import openstacksdk, while every
cloud-facing command still takes and documents ``--os-*``."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from l3ha.cli.help import command_parser
from l3ha.cli.main import build_parser

PROBE = """\
import sys
from l3ha.cli.main import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print("openstack" in sys.modules, code, file=sys.stderr)
"""


def imports_openstacksdk(*argv: str) -> bool:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    imported, code = done.stderr.splitlines()[-1].split()
    assert code in ("0", "None"), done.stderr
    return imported == "True"


@pytest.mark.parametrize(
    "argv", [["--help"], ["history", "--help"], ["help"], ["agent", "--help"], ["config", "sample"]]
)
def test_commands_that_reach_no_cloud_do_not_import_openstacksdk(argv: list[str]) -> None:
    assert not imports_openstacksdk(*argv)


def test_a_cloud_command_imports_it_for_its_help() -> None:
    assert imports_openstacksdk("agent", "list", "--help")


def flags(parser: argparse.ArgumentParser) -> set[str]:
    return {flag for action in parser._actions for flag in action.option_strings}


def test_the_options_are_added_when_the_command_runs() -> None:
    parser = build_parser()
    agent_list = command_parser(parser, ["agent", "list"])
    assert "--os-cloud" not in flags(agent_list)
    args = parser.parse_args(["agent", "list", "--os-cloud", "c1", "--os-region-name", "r2"])
    assert (args.os_cloud, args.os_region_name) == ("c1", "r2")
    assert {"--os-auth-url", "--insecure", "--timeout", "--os-cacert"} <= flags(agent_list)
    assert "--os-cloud" not in flags(command_parser(parser, ["router", "list"]))


def test_help_shows_them(capsys: pytest.CaptureFixture[str]) -> None:
    command_parser(build_parser(), ["evacuate"]).print_help()
    shown = capsys.readouterr().out
    assert "--os-cloud" in shown and "--os-password" in shown and "--api-timeout" in shown


def test_a_command_keeps_its_own_option_of_the_same_name() -> None:
    args = build_parser().parse_args(["probe", "--icmp", "127.0.0.1", "--timeout", "7"])
    assert args.timeout == 7.0 and not hasattr(args, "os_timeout")
    assert args.os_cloud is None  # the other openstack options are there
