"""Argument types for argparse: finite numbers, positive or non-negative; and the two
kinds of numeric option most commands have, counts and durations. Pure.

A bad value becomes argparse's one-line usage error (exit 2) naming the value.
"""

from __future__ import annotations

import argparse
import functools
import math
from collections.abc import Callable
from typing import Any, TypeVar

Number = TypeVar("Number", int, float)


def finite_float(text: str) -> float:
    """A finite number (not inf, not nan)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number: {text!r}")
    return value


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def _checked(
    parse: Callable[[str], Number], ok: Callable[[Number], bool], problem: str
) -> Callable[[str], Number]:
    """The type ``parse`` whose values must be ``ok``; else "``problem``: 'TEXT'"."""

    def check(text: str) -> Number:
        value = parse(text)
        if not ok(value):
            raise argparse.ArgumentTypeError(f"{problem}: {text!r}")
        return value

    return check


positive_float = _checked(finite_float, lambda value: value > 0, "must be positive")
non_negative_float = _checked(finite_float, lambda value: value >= 0, "must not be negative")
positive_int = _checked(_integer, lambda value: value >= 1, "must be at least 1")
non_negative_int = _checked(_integer, lambda value: value >= 0, "must not be negative")


def add_count(
    parser: Any,
    flag: str,
    default: float | None,
    help_text: str,
    *,
    kind: Any = int,
    metavar: str = "N",
) -> None:
    """A numeric option: by default a count (``N``); ``kind``: its type."""
    parser.add_argument(flag, metavar=metavar, type=kind, default=default, help=help_text)


#: A duration option, in seconds (``S``).
add_seconds = functools.partial(add_count, kind=non_negative_float, metavar="S")
