"""Benchmark: ``l3ha rolling`` against the naive upgrade, side by side, on the emulator.

I/O: an in-process emulator on 127.0.0.1, ``l3ha rolling`` in the same
process (its maintenance command a child ``l3ha emulator fault``), a
clouds.yaml and journals in a temporary directory; prints a table.

The upgrade of one network node is modelled as what a package upgrade does
to it: the L3 agent process stops, the node's data plane breaks while its
Open vSwitch agent restarts (``dataplane-fail``), and ``UPGRADE_S`` later the
agent comes back and resyncs every router it hosts (each dark until
processed). Two runs on the same cloud configuration (3 nodes, 300 routers):

- **naive**: upgrade every node at once (stop every agent, upgrade, start
  every agent), then wait until every router forwards again;
- **rolling**: ``l3ha rolling`` over the three nodes (drain, upgrade, prove
  stable, canary, undrain), then ``--rebalance-after``.

Measured: total time, and per router the longest single outage, from the
emulator's own data-plane record (every reachability change, timestamped):
the longest over all routers, the median router's, and router-seconds in all.
Router processing is scaled down ten times from the emulator's defaults so a
run takes a few minutes; the ratios are what matter.

    .venv/bin/python bench/bench_rolling.py        # about 4 minutes
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from l3ha.emulator import Emulator, EmulatorConfig
from l3ha.emulator.records import RouterRec

HOSTS = ("net-1", "net-2", "net-3")
UPGRADE_S = 5.0
L3HA = f"{shlex.quote(sys.executable)} -c 'from l3ha.cli.main import run; run()'"


def cloud_config(routers: int) -> EmulatorConfig:
    return EmulatorConfig(
        agents=3,
        routers=routers,
        report_interval=0.5,
        agent_down_time=2.0,
        router_base_time=0.15,
        router_port_time=0.025,
        agent_concurrency=8,
        seed=5,
    )


@dataclass
class Outages:
    """Every router's outages, from the simulation's reachability changes."""

    emu: Emulator
    down_since: dict[str, float] = field(default_factory=dict)
    longest: dict[str, float] = field(default_factory=dict)
    total: float = 0.0

    def __post_init__(self) -> None:
        previous = self.emu.sim.on_reachability

        def changed(router: RouterRec) -> None:
            previous(router)
            self._changed(router)

        self.emu.sim.on_reachability = changed

    def _changed(self, router: RouterRec) -> None:
        now = time.monotonic()
        if not router.reachable:
            self.down_since.setdefault(router.id, now)
            return
        start = self.down_since.pop(router.id, None)
        if start is not None:
            self.longest[router.id] = max(self.longest.get(router.id, 0.0), now - start)
            self.total += now - start

    def all_up(self) -> bool:
        with self.emu.world.lock:
            return all(r.reachable for r in self.emu.world.routers.values())


@dataclass
class Result:
    who: str
    seconds: float
    longest_s: float
    median_s: float
    router_s: float
    routers_hit: int


def _summarize(who: str, seconds: float, outages: Outages, routers: int) -> Result:
    values = list(outages.longest.values())
    padded = values + [0.0] * (routers - len(values))
    return Result(
        who,
        seconds,
        max(values, default=0.0),
        statistics.median(padded),
        outages.total,
        len(values),
    )


def _wait(check: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit("the cloud did not recover in time")
        time.sleep(0.05)


def naive(routers: int) -> Result:
    """Stop every agent, upgrade, start every agent; wait until every router forwards."""
    with Emulator(cloud_config(routers)) as emu:
        time.sleep(1.0)
        outages = Outages(emu)
        started = time.monotonic()
        for host in HOSTS:
            emu.faults.stop_agent(host)
            emu.faults.dataplane_fail(host)
        time.sleep(UPGRADE_S)
        for host in HOSTS:
            emu.faults.revive_agent(host)
        _wait(outages.all_up, 600)
        return _summarize("naive (all at once)", time.monotonic() - started, outages, routers)


def rolling(routers: int, workdir: Path) -> Result:
    """``l3ha rolling`` over the three nodes with --rebalance-after."""
    from l3ha.cli.main import main

    script = workdir / "upgrade.sh"
    script.write_text(
        f'set -e\nl3ha() {{ {L3HA} "$@"; }}\n'
        'l3ha emulator fault stop-agent "$1"\nl3ha emulator fault dataplane-fail "$1"\n'
        f'sleep {UPGRADE_S:g}\nl3ha emulator fault revive-agent "$1"\n'
    )
    with Emulator(cloud_config(routers)) as emu:
        clouds = emu.write_clouds_yaml(workdir / "clouds.yaml")
        os.environ.update(
            OS_CLIENT_CONFIG_FILE=str(clouds),
            OS_CLOUD="l3ha-emulator",
            L3HA_STATE_DIR=str(workdir / "state"),
        )
        time.sleep(1.0)
        outages = Outages(emu)
        started = time.monotonic()
        argv = ["rolling", "--hosts", ",".join(HOSTS), "--run", f"sh {script} {{host}}",
                "--stable-for", "3", "--dead-after", "4", "--report-interval", "1",
                "--poll-interval", "0.25", "--port-timeout", "120", "--canary-timeout", "30",
                "--rebalance-after", "--concurrency", "16"]  # fmt: skip
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(argv)
        seconds = time.monotonic() - started
        if code != 0:
            raise SystemExit(f"l3ha rolling exited {code}")
        _wait(outages.all_up, 60)
        return _summarize("l3ha rolling", seconds, outages, routers)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--routers", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="l3ha-bench-rolling-") as tmp:
        results = [naive(args.routers), rolling(args.routers, Path(tmp))]
    base = results[0]
    print(f"3 network nodes, {args.routers} routers, upgrade of one node {UPGRADE_S:g} s\n")
    print("| way | total time | longest outage | median router's longest | router-seconds down "
          "| routers hit |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r.who} | {r.seconds:.1f} s | {r.longest_s:.2f} s | {r.median_s:.2f} s | "
              f"{r.router_s:.0f} | {r.routers_hit} |")  # fmt: skip
    roll = results[1]
    print(
        f"\nrolling/naive: total time x{roll.seconds / base.seconds:.1f}, longest outage "
        f"x{roll.longest_s / base.longest_s:.3f}, router-seconds "
        f"x{roll.router_s / max(base.router_s, 1e-9):.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
