"""How every kind's action command runs its plan: the execution options (``--dry-run``,
``--concurrency``, ``--rate``, ``--no-wait``, ``--port-timeout``, ``--state-dir``, ``-f``),
the executor options they make, the journal, and the progress lines and bar.
I/O: opens the journal in the state dir, writes stderr.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import TYPE_CHECKING, Any

from l3ha.cli.argtypes import positive_float, positive_int
from l3ha.cli.common import add_state_dir_option, state_dir
from l3ha.cli.output import add_format_options

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from l3ha.executor import ExecutorOptions, Progress
    from l3ha.journal import Journal

#: Moves written at once by a command: enough to keep a Neutron answering in 100 ms
#: busy at the API rate cap (32 writers x ~4 calls each per 0.4 s ~ 300 calls/s).
DEFAULT_CONCURRENCY = 32


def add_execution_options(parser: argparse.ArgumentParser) -> None:
    """How a plan is run: dry run, concurrency, rate, waiting for ports, journal."""
    group = parser.add_argument_group("execution")
    group.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    group.add_argument(
        "--concurrency",
        type=positive_int,
        default=DEFAULT_CONCURRENCY,
        metavar="N",
        help="moves written at the same time; hides API latency, while --api-rate bounds the "
        f"load (default: {DEFAULT_CONCURRENCY})",
    )
    group.add_argument(
        "--rate",
        type=positive_float,
        metavar="MOVES_PER_S",
        help="start at most this many moves per second (default: unlimited)",
    )
    group.add_argument(
        "--no-wait",
        action="store_true",
        help="do not wait for the routers' ports to turn ACTIVE on the target",
    )
    group.add_argument(
        "--port-timeout",
        type=positive_float,
        default=300.0,
        metavar="SECONDS",
        help="report a move as pending (a warning) when its ports are not ACTIVE by then "
        "(default: 300)",
    )
    add_state_dir_option(parser)
    add_format_options(parser, columns=False)


def open_journal(
    args: argparse.Namespace, dry_run: bool = False
) -> AbstractContextManager[Journal | None]:
    """The journal in ``--state-dir`` (or the default state dir); for a dry run only one
    that exists (a dry run creates none), else ``None``."""
    from contextlib import nullcontext

    from l3ha.journal import DB_NAME, Journal

    path = state_dir(args)
    if dry_run and not (path / DB_NAME).exists():
        return nullcontext()
    return Journal(path)


def say(text: str) -> None:
    """A progress line of an action, on stderr."""
    sys.stderr.write(f"l3ha: {text}\n")


def progress_printer() -> Any:
    """A progress bar on stderr when it is a terminal, else None."""
    if not sys.stderr.isatty():
        return None

    def show(progress: Progress) -> None:
        width = 30
        filled = width * progress.done // max(progress.total, 1)
        bar = "#" * filled + "." * (width - filled)
        end = "\n" if progress.done >= progress.total else ""
        sys.stderr.write(f"\r[{bar}] {progress.done}/{progress.total} {end}")
        sys.stderr.flush()

    return show


def executor_options(args: argparse.Namespace) -> ExecutorOptions:
    """The execution options (``add_execution_options``) as executor options."""
    from l3ha.executor import ExecutorOptions

    return ExecutorOptions(
        concurrency=args.concurrency,
        rate=args.rate,
        burst=max(1, math.ceil(args.rate)) if args.rate else ExecutorOptions.burst,
        wait_ports=not args.no_wait,
        port_timeout=args.port_timeout,
        dry_run=bool(args.dry_run),
    )
