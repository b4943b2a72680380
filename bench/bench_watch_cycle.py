"""Benchmark: what one ``l3ha watch`` cycle costs on a big cloud, quiet and after a change.

I/O: runs the emulator in a child process (its own core, like a Neutron
server) behind the counting proxy (``bench/counting_proxy.py``), runs the
daemon's cycle in this process, and prints a table.

Measured per cycle: wall time and API calls by kind, for the first cycle (a
full read of every binding), quiet cycles (nothing changed: heartbeats only),
and the cycle after one agent's verdict changed (that agent's bindings are
read again). Side by side, the one-shot reads an operator would otherwise
poll with (``read_snapshot``, as ``l3ha check`` and ``snapshot save`` do).
The goal: a quiet cycle at 500 agents and 25,000 routers in under 1 s and a
handful of calls.

    .venv/bin/python bench/bench_watch_cycle.py                    # 500 agents, 25,000 routers
    .venv/bin/python bench/bench_watch_cycle.py --agents 50 --routers 2500
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing as mp
import os
import tempfile
import time
from collections import Counter
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path

from counting_proxy import CountingProxy  # bench/ is on the path when run as a script
from l3ha.clock import SystemClock
from l3ha.cloud.adapter import connect
from l3ha.daemon.settings import load_settings
from l3ha.daemon.watch import Parts, Watcher
from l3ha.emulator import Emulator, EmulatorConfig
from l3ha.journal import Journal


def serve(cfg: EmulatorConfig, pipe: Connection) -> None:
    """Child process: run the emulator; ``kill HOST`` and ``stop`` come from the pipe."""
    emu = Emulator(cfg).start()
    pipe.send(emu.url)
    while True:
        command, arg = pipe.recv()
        if command == "kill":
            emu.faults.kill_agent(arg)
            pipe.send("ok")
        else:
            emu.stop()
            pipe.send("ok")
            return


def write_clouds(path: Path, url: str) -> None:
    path.write_text(
        f"clouds:\n  bench:\n    auth_type: none\n    network_endpoint_override: {url}\n",
        encoding="utf-8",
    )


def row(label: str, seconds: float, calls: Counter[str]) -> str:
    kinds = ", ".join(f"{k} x{v}" for k, v in sorted(calls.items(), key=lambda kv: -kv[1])[:4])
    return f"{label:34} {seconds:8.3f} {sum(calls.values()):7d}  {kinds}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=500)
    parser.add_argument("--routers", type=int, default=25000)
    parser.add_argument("--quiet-cycles", type=int, default=5)
    args = parser.parse_args()
    logging.getLogger("l3ha").addHandler(logging.NullHandler())  # the table is the output
    logging.getLogger("l3ha").propagate = False
    cfg = EmulatorConfig(
        agents=args.agents,
        routers=args.routers,
        report_interval=1.0,
        agent_down_time=5.0,
        router_base_time=0.01,
        router_port_time=0.0,
        seed=2,
    )
    parent, child = mp.Pipe()
    proc = mp.get_context("spawn").Process(target=serve, args=(cfg, child))
    built = time.monotonic()
    proc.start()
    upstream = parent.recv()
    print(f"emulator: {args.agents} agents, {args.routers} routers, "
          f"built in {time.monotonic() - built:.1f} s")  # fmt: skip
    proxy = CountingProxy(upstream).start()
    with tempfile.TemporaryDirectory(prefix="l3ha-bench-") as tmp:
        clouds = Path(tmp) / "clouds.yaml"
        write_clouds(clouds, proxy.url)
        os.environ.update(OS_CLIENT_CONFIG_FILE=str(clouds), OS_CLOUD="bench")
        cloud = connect("bench", timeout=300)
        settings = replace(
            load_settings(None, [], default_files=()),
            state_dir=Path(tmp) / "state",
            interval=1.0,
            dead_after=5.0,
            report_interval=1.0,
            metrics_port=0,
            full_resync=1000,
            coordination=(Path(tmp) / "lock").as_uri(),
        )
        lines = []
        with Journal(settings.state_dir) as journal:
            watcher = Watcher(Parts(settings, cloud, journal, SystemClock()))

            def cycle(label: str) -> None:
                proxy.reset()
                started = time.monotonic()
                watcher.cycle()
                lines.append(row(label, time.monotonic() - started, proxy.counts()))

            cycle("first cycle (full read)")
            for n in range(args.quiet_cycles):
                time.sleep(0.5)
                cycle(f"quiet cycle {n + 1}")
            parent.send(("kill", "net-1"))
            parent.recv()
            time.sleep(6.5)  # net-1 turns stale for l3ha
            cycle("cycle after a verdict changed")
            proxy.reset()
            started = time.monotonic()
            cloud.read_snapshot()
            lines.append(row("one-shot read_snapshot()", time.monotonic() - started,
                             proxy.counts()))  # fmt: skip
            watcher.request_stop()
    print(f"{'':34} {'seconds':>8} {'calls':>7}  calls by kind")
    for line in lines:
        print(line)
    parent.send(("stop", ""))
    parent.recv()
    proc.join(timeout=30)
    proxy.stop()


if __name__ == "__main__":
    main()
