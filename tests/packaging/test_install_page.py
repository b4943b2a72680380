"""docs/install.md matches the unit, the package and the commands it shows."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from l3ha import __version__
from l3ha.cli.main import build_parser
from l3ha.daemon.settings import load_settings

REPO = Path(__file__).parents[2]
PAGE = (REPO / "docs" / "install.md").read_text(encoding="utf-8")
UNIT = (REPO / "contrib" / "l3ha-watch.service").read_text(encoding="utf-8")


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE, flags=re.DOTALL)


def test_the_units_execstart_is_the_virtualenv_the_page_installs_into() -> None:
    venvs = set(re.findall(r"python3 -m venv (\S+)", PAGE))
    assert len(venvs) == 1, venvs
    exec_start = re.search(r"^ExecStart=(.*)$", UNIT, flags=re.MULTILINE)
    assert exec_start is not None
    assert exec_start.group(1) == f"{venvs.pop()}/bin/l3ha watch"


def test_the_page_names_the_wheel_this_version_builds() -> None:
    wheels = set(re.findall(r"l3ha-[\w.]+-py3-none-any\.whl", PAGE))
    assert wheels == {f"l3ha-{__version__}-py3-none-any.whl"}


def l3ha_commands() -> list[list[str]]:
    """Every l3ha command line in the page's shell blocks, and in its inline code with
    options (a bare `l3ha drain` in prose names a command, it is not a command line)."""
    inline = [code for code in re.findall(r"`([^`\n]*l3ha [^`\n]*)`", PAGE) if " --" in code]
    found = []
    for text in [*blocks("sh"), *inline]:
        for line in text.splitlines():
            words = shlex.split(line.split(" > ")[0].split("#")[0])
            if words[:3] == ["sudo", "-u", "l3ha"]:
                words = words[3:]
            if words and words[0] in ("l3ha", "/opt/l3ha/bin/l3ha"):
                found.append(words[1:])
    return found


def test_every_l3ha_command_on_the_page_parses() -> None:
    commands = l3ha_commands()
    assert ["config", "sample"] in commands and [
        "check",
        "--state-dir",
        "/var/lib/l3ha",
    ] in commands
    parser = build_parser()
    for argv in commands:
        if argv == ["--version"]:
            continue
        try:
            parser.parse_args(argv)
        except SystemExit as exc:
            pytest.fail(f"'l3ha {shlex.join(argv)}' does not parse (exit {exc.code})")


def test_the_pages_configuration_is_valid(tmp_path: Path) -> None:
    (ini,) = blocks("ini")
    conf = tmp_path / "l3ha.conf"
    conf.write_text(ini, encoding="utf-8")
    settings = load_settings(None, [str(conf)], default_files=(), environ={})
    assert settings.os_cloud == "l3ha"
    assert settings.coordination == "etcd3+http://127.0.0.1:2379?lock_timeout=10"
