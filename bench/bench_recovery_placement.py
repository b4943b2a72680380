"""Benchmark: an evacuation placed for recovery time versus for balance only, on the emulator.

I/O: runs the calibrated emulator in this process on 127.0.0.1, on a manual
clock (simulated time, no sleeping), twice with identical settings, and prints
a table.

Setup (issue 20's real-stack case): 4 agents, 20 routers, the survivors
unevenly loaded: net-1 (the one that dies) holds 7 routers, net-2 1, net-3 and
net-4 6 each. The emulator runs with its calibrated defaults (docs/fidelity.md:
an agent wires 2 routers at a time, 3.0 s + 0.25 s per port each).

At t = 0 net-1 is killed; at ``--dead-after`` seconds (14 s: when l3ha judged
the node dead on the real stack) l3ha plans the evacuation and writes every
move at once (the writes take no simulated time here, so the figures show the
placement's effect alone); then the clock moves in 0.1 s steps until every
router forwards again. Run once with the recovery placement (the default since
issue 20) and once with ``PlacementPolicy(recovery_spread=False)`` (balance
only, the placement before). Measured: the routers each target received, the
time from the kill until every router forwards again, the router-seconds of
outage, and the longest outage.

    .venv/bin/python bench/bench_recovery_placement.py       # a few seconds
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from l3ha.clock import ManualClock
from l3ha.cloud.adapter import NeutronCloud, connect
from l3ha.emulator import Emulator
from l3ha.emulator.testing import emulated_cloud
from l3ha.model import MoveKind, Plan
from l3ha.planner import PlacementPolicy, plan_evacuate
from l3ha.weights import WeightPolicy

STEP = 0.1  # simulated seconds per clock step
LAYOUT = {"net-1": 7, "net-2": 1, "net-3": 6, "net-4": 6}  # routers per agent before the kill
LIMIT = 600.0  # simulated seconds before giving up


@dataclass
class Outcome:
    """One run: where the routers went and how long they were dark."""

    received: dict[str, int]
    recovered: float
    router_seconds: float
    longest: float


def arrange(emu: Emulator, cloud: NeutronCloud) -> None:
    """Put the routers as ``LAYOUT`` says, then let every agent wire them (set-up)."""
    ids = emu.agent_ids_by_host()
    snapshot = cloud.read_snapshot()
    wanted = [host for host, n in LAYOUT.items() for _ in range(n)]
    for binding, host in zip(
        sorted(snapshot.bindings, key=lambda b: b.router_id), wanted, strict=True
    ):
        if binding.agent_id != ids[host]:
            cloud.unbind(binding.router_id, binding.agent_id)
            cloud.bind(binding.router_id, ids[host])
    settle(emu, lambda: all(r["reachable"] for r in emu.dataplane().values()), "set-up")


def settle(emu: Emulator, done: object, what: str) -> float:
    """Advance the clock until ``done()``; the simulated seconds it took."""
    waited = 0.0
    while not done():  # type: ignore[operator]
        if waited > LIMIT:
            sys.exit(f"bench: {what} did not finish within {LIMIT:g} simulated seconds")
        emu.advance(STEP)
        waited += STEP
    return waited


def run_once(policy: PlacementPolicy, dead_after: float, seed: int) -> Outcome:
    with (
        tempfile.TemporaryDirectory(prefix="l3ha-bench-") as tmp,
        emulated_cloud(
            ManualClock(), workdir=Path(tmp), agents=4, routers=20, seed=seed, environ=os.environ
        ) as cloud_info,
    ):
        emu = cloud_info.emulator
        assert emu is not None
        cloud = connect(cloud_info.name)
        arrange(emu, cloud)
        return evacuate(emu, cloud, policy, dead_after)


def evacuate(
    emu: Emulator, cloud: NeutronCloud, policy: PlacementPolicy, dead_after: float
) -> Outcome:
    source = emu.agent_ids_by_host()["net-1"]
    moving = [b.router_id for b in cloud.read_snapshot().bindings_of_agent(source)]
    emu.faults.kill_agent("net-1")
    dark_since = emu.clock.monotonic()
    emu.advance(dead_after)
    plan = plan_evacuate(cloud.read_snapshot(), source, policy, WeightPolicy())
    if not isinstance(plan, Plan):
        sys.exit(f"bench: the planner refused: {plan.message}")
    for move in plan.moves:
        if move.kind is MoveKind.MOVE and move.target is not None:
            cloud.unbind(move.router_id, source)
            cloud.bind(move.router_id, move.target)
    back: dict[str, float] = {}

    def all_back() -> bool:
        now = emu.clock.monotonic() - dark_since
        for router_id, row in emu.dataplane().items():
            if router_id in moving and row["reachable"] and router_id not in back:
                back[router_id] = now
        return len(back) == len(moving)

    settle(emu, all_back, "the evacuation")
    hosts = {a.id: a.host for a in cloud.read_snapshot().agents}
    received = Counter(hosts[m.target] for m in plan.moves if m.target is not None)
    return Outcome(
        dict(sorted(received.items())),
        max(back.values()),
        sum(back.values()),
        max(back.values()),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dead-after", type=float, default=14.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.dead_after < 0:
        sys.exit("bench: --dead-after must be >= 0")
    runs = {
        "balance only (before)": run_once(
            PlacementPolicy(recovery_spread=False), args.dead_after, args.seed
        ),
        "recovery spread (now)": run_once(PlacementPolicy(), args.dead_after, args.seed),
    }
    rows = [("", *runs)]
    rows.append(
        (
            "routers received",
            *(" ".join(f"{h}:{n}" for h, n in o.received.items()) for o in runs.values()),
        )
    )
    rows.append(("kill -> all forward (s)", *(f"{o.recovered:.1f}" for o in runs.values())))
    rows.append(
        ("after the writes (s)", *(f"{o.recovered - args.dead_after:.1f}" for o in runs.values()))
    )
    rows.append(("router-seconds of outage", *(f"{o.router_seconds:.1f}" for o in runs.values())))
    before, now = runs.values()
    rows.append(("", "", f"{before.recovered / now.recovered:.2f}x faster to full recovery"))
    widths = [max(len(str(r[i])) for r in rows) for i in range(3)]
    print(f"4 agents, 20 routers, 7 on net-1 (killed at 0 s), dead-after {args.dead_after:g} s")
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


if __name__ == "__main__":
    main()
