"""docs/configuration.md is what ``l3ha config reference`` prints now, and says what it must."""

from __future__ import annotations

from pathlib import Path

import pytest

from l3ha.cli.config_reference import one_shot_flags, reference_markdown
from l3ha.cli.main import build_parser, main
from l3ha.daemon.settings import list_opts

PAGE = Path(__file__).parents[2] / "docs" / "configuration.md"


def test_the_committed_page_is_what_the_generator_prints_now() -> None:
    assert PAGE.read_text(encoding="utf-8") == reference_markdown(build_parser()), (
        "docs/configuration.md is stale: run 'l3ha config reference > docs/configuration.md'"
    )


def test_l3ha_config_reference_prints_the_page(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "reference"]) == 0
    assert capsys.readouterr().out == PAGE.read_text(encoding="utf-8")


def test_every_option_has_a_section_with_its_help() -> None:
    page = PAGE.read_text(encoding="utf-8")
    for group, opts in list_opts():
        assert f"\n## [{group}]\n" in page
        for opt in opts:
            section = page.split(f"### `{opt.dest}`\n", 1)[1].split("\n### ", 1)[0]
            assert str(opt.help) in section, opt.dest


def test_the_page_says_which_options_only_watch_reads() -> None:
    page = PAGE.read_text(encoding="utf-8")
    interval = page.split("### `interval`\n", 1)[1].split("\n### ", 1)[0]
    assert "none (read by `l3ha watch` only)" in interval
    concurrency = page.split("### `concurrency`\n", 1)[1].split("\n### ", 1)[0]
    assert "(default there: 32): " in concurrency and "`evacuate`" in concurrency
    assert "do not take\n`--config-file`" in page  # and the reasons follow


def test_one_shot_flags_leave_out_the_file_readers_and_test_tools() -> None:
    flags = one_shot_flags(build_parser())
    commands = {command for by_command in flags.values() for command in by_command}
    assert "evacuate" in commands
    assert not commands & {"watch", "config show"}
    assert not any(command.startswith(("lab ", "emulator ")) for command in flags["--state-dir"])
    assert flags["--api-rate"]["evacuate"] == "100"
