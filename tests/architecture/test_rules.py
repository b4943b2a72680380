"""The architecture's rules (docs/architecture.md, "Rules checked in CI") as tests.

The import rules are import-linter contracts in pyproject.toml; ``lint-imports`` checks them
here so a violation fails the suite. The size rules are read from the source with ``ast``.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "src" / "l3ha"

MAX_MODULE_LINES = 500
MAX_CLASS_METHODS = 25
#: Modules and classes allowed over the limits, with the reason. Empty: none is over today.
OVERSIZE_ALLOWED: dict[str, str] = {}


def _lint_imports() -> subprocess.CompletedProcess[str]:
    command = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(
        [str(command), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def test_import_contracts_are_kept() -> None:
    result = _lint_imports()
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    assert re.search(r"Contracts: \d+ kept, 0 broken", report), report
    for name in ("layers", "pure-core", "sdk-boundary", "emulator-apart", "cli-on-top"):
        assert f'id = "{name}"' in (ROOT / "pyproject.toml").read_text(), name


def _modules() -> list[Path]:
    return sorted(SOURCE.rglob("*.py"))


def _name(path: Path) -> str:
    return ".".join(path.relative_to(SOURCE.parent).with_suffix("").parts)


def test_no_module_is_over_the_line_limit() -> None:
    over = {
        _name(path): lines
        for path in _modules()
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert {name: n for name, n in over.items() if name not in OVERSIZE_ALLOWED} == {}


def _methods_per_class(path: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ClassDef):
            methods = [
                item
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            ]
            counts[f"{_name(path)}.{node.name}"] = len(methods)
    return counts


def test_no_class_has_too_many_methods() -> None:
    over = {
        name: count
        for path in _modules()
        for name, count in _methods_per_class(path).items()
        if count > MAX_CLASS_METHODS and name not in OVERSIZE_ALLOWED
    }
    assert over == {}


def test_make_test_runs_lint() -> None:
    makefile = (ROOT / "Makefile").read_text()
    test_target = re.search(r"^test:(.*)$", makefile, re.MULTILINE)
    assert test_target is not None
    assert "lint" in test_target.group(1).split()
    lint_recipe = re.search(r"^lint:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert lint_recipe is not None
    recipe = lint_recipe.group(1)
    assert "ruff check" in recipe and "mypy" in recipe and "lint-imports" in recipe


def test_no_import_cycles_in_the_emulator_and_the_cli() -> None:
    """Among the modules of each package, imports run one way (type-only imports count)."""
    graph = grimp.build_graph("l3ha", exclude_type_checking_imports=False)
    for package in ("l3ha.emulator", "l3ha.cli"):
        assert graph.nominate_cycle_breakers(package) == set(), package
