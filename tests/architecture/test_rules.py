"""The architecture's rules (docs/architecture.md, "Rules checked in CI") as tests.

The import rules are import-linter contracts in pyproject.toml; ``lint-imports`` checks them
here so a violation fails the suite. The size rules are read from the source with ``ast``.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
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


def test_every_module_that_says_it_does_no_io_is_held_to_it() -> None:
    """A module whose docstring says "Pure" or "No I/O" is a source of the pure-core
    contract (itself or its package), so import-linter keeps the docstring true."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    held = next(c for c in contracts if c["id"] == "pure-core")["source_modules"]
    unheld = []
    for path in _modules():
        name = _name(path).removesuffix(".__init__")
        docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
        inside = any(name == m or name.startswith(m + ".") for m in held)
        if re.search(r"\bPure\b|\bNo I/O\b", docstring) and not inside:
            unheld.append(name)
    assert unheld == []


def test_no_module_is_over_the_line_limit() -> None:
    over = {
        _name(path): lines
        for path in _modules()
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert {name: n for name, n in over.items() if name not in OVERSIZE_ALLOWED} == {}


def test_no_test_or_benchmark_module_is_over_the_line_limit() -> None:
    """The suite and the benchmarks are held to the same size as the source."""
    over = {
        str(path.relative_to(ROOT)): lines
        for folder in ("tests", "bench")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert over == {}


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


def test_no_import_cycles_inside_any_package() -> None:
    """Among the modules of each package, imports run one way (type-only imports count).
    Across the top-level packages the layers contract rules (executor and kinds, the
    dispatcher and the kinds it runs, are the one pair of siblings that meet)."""
    graph = grimp.build_graph("l3ha", exclude_type_checking_imports=False)
    packages = sorted(m for m in graph.modules if m != "l3ha" and graph.find_children(m))
    assert {"l3ha.emulator", "l3ha.cli", "l3ha.executor", "l3ha.lab.stack"} <= set(packages)
    for package in packages:
        assert graph.nominate_cycle_breakers(package) == set(), package
