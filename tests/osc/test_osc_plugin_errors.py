"""``openstack l3ha ...`` when the operator gets it wrong or a crash left an operation open:
the real ``openstack`` command with l3ha's plugin against the emulator. A usage error is
one line and l3ha's exit code (2; 3 for ``check``, as Nagios plugins do), never a usage
block or a traceback; an interrupted operation gets the note ``l3ha`` prints."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from l3ha.emulator import Emulator
from l3ha.emulator.testing import FAST, Clocking, emulated_cloud

from .conftest import Commands

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def emulator() -> Iterator[Emulator]:
    """3 agents, 4 routers on the real clock (repair waits for real port updates)."""
    with emulated_cloud(Clocking.REAL, agents=3, routers=4, seed=5, **FAST) as cloud:
        assert cloud.emulator is not None
        yield cloud.emulator


def assert_one_line_error(done: subprocess.CompletedProcess[str], prefix: str) -> None:
    assert done.stderr.startswith(f"{prefix}: error: "), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "usage:" not in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("command", "options", "naming"),
    [
        ("agent list", ["--bogus"], "unrecognized arguments: --bogus"),
        ("agent list", ["-f", "bogus"], "invalid choice: 'bogus'"),
        ("evacuate", [], "the following arguments are required: AGENT"),
        ("rebalance", ["--max-routers-per-agent", "0"], "--max-routers-per-agent"),
        ("drain", ["net-1", "--concurrency", "many"], "--concurrency"),
    ],
)
def test_a_usage_error_is_one_line_and_exit_2(
    commands: Commands, command: str, options: list[str], naming: str
) -> None:
    done = commands.openstack("l3ha", *command.split(), *options)
    assert done.returncode == 2, done.stderr
    assert_one_line_error(done, f"openstack l3ha {command}")
    assert naming in done.stderr
    assert f"(see 'openstack l3ha {command} --help')" in done.stderr


def test_a_missing_journal_directory_is_one_line(commands: Commands, tmp_path: Path) -> None:
    done = commands.openstack("l3ha", "history", "--state-dir", str(tmp_path / "typo"))
    assert done.returncode == 2
    assert_one_line_error(done, "openstack l3ha history")
    assert "does not exist" in done.stderr


def test_a_usage_error_of_check_is_unknown_as_in_l3ha(commands: Commands) -> None:
    done = commands.openstack("l3ha", "check", "--bogus")
    assert done.returncode == commands.l3ha("check", "--bogus").returncode == 3
    assert_one_line_error(done, "openstack l3ha check")


@pytest.mark.parametrize(
    ("argv", "naming"),
    [
        (["agent", "show", "net"], "did you mean: net-1, net-2, net-3"),  # ambiguous
        (["agent", "show", "net-99"], "no L3 agent with host or id 'net-99'"),
        (["router", "show", "no-such-router"], "no router with id, name or id prefix"),
        (["drain", "net-1", "--to", "net-1"], "the agent being drained"),
    ],
)
def test_bad_input_the_command_finds_is_one_line_and_exit_2(
    commands: Commands, emulator: Emulator, argv: list[str], naming: str
) -> None:
    before = emulator.state()["agents"]
    done = commands.openstack("l3ha", *argv)
    assert done.returncode == 2, done.stderr
    assert_one_line_error(done, "openstack l3ha")
    assert naming in done.stderr
    assert emulator.state()["agents"] == before


CRASH = """\
import os, sys
from pathlib import Path
from l3ha.journal import Journal, MoveStep
from l3ha.model import Move, MoveKind
journal = Journal(Path(sys.argv[1]))
move = Move(sys.argv[2], MoveKind.MOVE, target=sys.argv[4], source=sys.argv[3])
op, (m,) = journal.begin_operation("migrate", {}, [move])
journal.record_step(m, MoveStep.INTENT, target=sys.argv[4])
os._exit(9)  # dies like kill -9: the operation is never finished
"""


def test_an_interrupted_operation_gets_l3has_note_and_repair_finishes_it(
    commands: Commands, tmp_path: Path
) -> None:
    routers = commands.openstack_json("l3ha", "router", "list")
    router = next(r for r in routers if not r["ha"] and len(r["agents"]) == 1)
    agents = {row["host"]: row["id"] for row in commands.openstack_json("l3ha", "agent", "list")}
    (source,) = router["agents"]
    target = next(host for host in agents if host != source)
    crash = [str(tmp_path / "state"), router["id"], agents[source], agents[target]]
    assert subprocess.run([sys.executable, "-c", CRASH, *crash], check=False).returncode == 9

    listed = commands.openstack("l3ha", "agent", "list", "-c", "host")
    assert listed.returncode == 0, listed.stderr
    (note,) = listed.stderr.splitlines()
    assert note.startswith("openstack l3ha: note: operation 1 (migrate, started ")
    assert note.endswith("was interrupted; 'openstack l3ha repair' finishes it from the "
                         "cloud's actual state")  # fmt: skip
    own = commands.l3ha("agent", "list", "-c", "host")
    assert own.stderr == note.replace("openstack l3ha", "l3ha") + "\n"

    repaired = commands.openstack("l3ha", "repair", "--port-timeout", "20")
    assert repaired.returncode == 0, repaired.stderr
    assert "finishing it" in repaired.stderr and "note:" not in repaired.stderr
    assert commands.openstack("l3ha", "agent", "list").stderr == ""
