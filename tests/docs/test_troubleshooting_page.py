"""docs/troubleshooting.md explains every halt reason and every exit code l3ha uses."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import l3ha
from l3ha.cli.check import UNKNOWN
from l3ha.errors import L3haError
from l3ha.health import Verdict
from l3ha.model import HaltReason

PAGE = (Path(__file__).parents[2] / "docs" / "troubleshooting.md").read_text(encoding="utf-8")

#: Exit codes set outside the error classes: usage errors (argparse, cli.main), Ctrl-C.
CLI_CODES = {0, 2, 130}


def error_classes() -> set[type[L3haError]]:
    """Every L3haError subclass in l3ha (the cli, emulator and lab modules import lazily)."""
    for info in pkgutil.walk_packages(l3ha.__path__, "l3ha."):
        importlib.import_module(info.name)
    found: set[type[L3haError]] = set()
    todo: list[type[L3haError]] = [L3haError]
    while todo:
        cls = todo.pop()
        found.add(cls)
        todo.extend(cls.__subclasses__())
    return found


def documented_exit_codes() -> set[int]:
    table = PAGE.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    return {int(code) for code in re.findall(r"^\| (\d+) \|", table, flags=re.MULTILINE)}


def test_every_exit_code_is_in_the_table() -> None:
    used = {cls.exit_code for cls in error_classes()} | CLI_CODES | {0, 1, 2, UNKNOWN}
    assert used == documented_exit_codes()


def test_every_halt_reason_has_a_section() -> None:
    sections = {
        name: body
        for heading, body in re.findall(r"^### ([^\n]+)\n(.*?)(?=^##|\Z)", PAGE, re.M | re.S)
        for name in re.findall(r"`([a-z_]+)`", heading)
    }
    assert {reason.value for reason in HaltReason} <= set(sections)
    for reason in HaltReason:
        body = sections[reason.value]
        assert "What to do" in body, reason.value


def test_every_verdict_is_explained() -> None:
    rows = set(re.findall(r"^\| `([a-z_]+)` \|", PAGE, flags=re.MULTILINE))
    assert {verdict.value for verdict in Verdict} == rows


def test_the_metrics_named_exist() -> None:
    from l3ha.daemon.metrics import WatchMetrics

    exported = WatchMetrics().metric_names()
    for name in set(re.findall(r"\bl3ha_[a-z_]+", PAGE)):
        assert name in exported or f"{name}_count" in exported, name
