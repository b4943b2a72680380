"""Start-up benchmark: how long ``l3ha`` takes to print a help. I/O: runs the l3ha command.

Run: ``.venv/bin/python bench/bench_startup.py`` (``--runs N``, default 10).
Prints one row per command line: mean wall and CPU (user + system, of the child)
seconds over ``--runs`` runs. ``l3ha --help`` and ``l3ha history --help`` never
import openstacksdk; ``l3ha agent list --help`` builds its ``--os-*`` options,
which does. Wall time depends on the machine's load; CPU time much less.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = (["--help"], ["history", "--help"], ["agent", "list", "--help"])


def measure(l3ha: str, argv: list[str], runs: int) -> tuple[float, float]:
    """Mean wall and child CPU seconds of ``l3ha ARGV`` over ``runs`` runs."""
    wall = cpu = 0.0
    for _ in range(runs):
        before, began = os.times(), time.perf_counter()
        subprocess.run([l3ha, *argv], stdout=subprocess.DEVNULL, check=True, timeout=60)
        wall += time.perf_counter() - began
        after = os.times()
        cpu += (after.children_user - before.children_user) + (
            after.children_system - before.children_system
        )
    return wall / runs, cpu / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    l3ha = str(Path(sys.executable).parent / "l3ha")
    print(f"{'command':<24} {'wall s':>7} {'cpu s':>7}   (mean of {args.runs})")
    for argv in COMMANDS:
        wall, cpu = measure(l3ha, argv, args.runs)
        print(f"{'l3ha ' + ' '.join(argv):<24} {wall:7.3f} {cpu:7.3f}")


if __name__ == "__main__":
    main()
