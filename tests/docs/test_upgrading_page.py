"""docs/upgrading.md names the files l3ha really keeps, and its commands parse."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from l3ha import __version__
from l3ha.cli.main import build_parser
from l3ha.daemon.status import STATUS_FILE
from l3ha.journal.statedir import DB_NAME
from l3ha.operations.rolling.record import DB_NAME as ROLLING_DB_NAME

PAGE = (Path(__file__).parents[2] / "docs" / "upgrading.md").read_text(encoding="utf-8")


def test_the_state_files_in_the_table_are_the_ones_l3ha_writes() -> None:
    files = set(re.findall(r"^\| `([\w.-]+)` \|", PAGE, flags=re.MULTILINE))
    assert files == {DB_NAME, ROLLING_DB_NAME, STATUS_FILE}


def test_the_page_speaks_of_this_version() -> None:
    assert f"l3ha {__version__} is the first release" in PAGE
    assert "TODO" not in PAGE


def test_its_l3ha_commands_parse() -> None:
    parser = build_parser()
    lines = [
        shlex.split(line.split("#")[0])
        for block in re.findall(r"```sh\n(.*?)```", PAGE, flags=re.DOTALL)
        for line in block.splitlines()
    ]
    commands = [words[1:] for words in lines if words and words[0].endswith("l3ha")]
    assert ["config", "show"] in commands
    for argv in commands:
        if argv != ["--version"]:
            parser.parse_args(argv)
