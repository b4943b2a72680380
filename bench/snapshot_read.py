"""Benchmark: time to read a snapshot through the adapter, by thread-pool size. I/O: loopback HTTP.

Starts the Neutron API emulator in this process (agents, routers, HA routers
as given), connects through openstacksdk exactly as the commands do, and
times ``NeutronCloud.read_snapshot`` with 1, 4 and 8 workers (per-agent
l3-routers calls made concurrently), with and without ``ha_state``.

    .venv/bin/python bench/snapshot_read.py --agents 100 --routers 5000 --ha-routers 500
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from l3ha.cloud.adapter import connect
from l3ha.emulator import Emulator, EmulatorConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--routers", type=int, default=5000)
    parser.add_argument("--ha-routers", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument(
        "--api-latency-ms",
        type=float,
        default=0.0,
        help="added per request by the emulator (a remote API's round trip)",
    )
    args = parser.parse_args()
    config = EmulatorConfig(
        agents=args.agents,
        routers=args.routers,
        ha_routers=args.ha_routers,
        azs=2,
        router_base_time=0.0,
        router_port_time=0.0,
    )
    with Emulator(config) as emu, tempfile.TemporaryDirectory() as tmp:
        os.environ["OS_CLIENT_CONFIG_FILE"] = str(emu.write_clouds_yaml(Path(tmp) / "c.yaml"))
        if args.api_latency_ms:
            emu.faults.api_latency(args.api_latency_ms)
        print(
            f"agents={args.agents} routers={args.routers} ha_routers={args.ha_routers} "
            f"api_latency_ms={args.api_latency_ms:g}"
        )
        print(f"{'workers':>7} {'ha_state':>8} {'median_s':>9} {'min_s':>7} {'bindings':>8}")
        for workers in args.workers:
            cloud = connect("l3ha-emulator", workers=workers)
            for with_ha in (False, True):
                times, count = [], 0
                for _ in range(args.repeat):
                    start = time.perf_counter()
                    snap = cloud.read_snapshot(with_ha_state=with_ha)
                    times.append(time.perf_counter() - start)
                    count = len(snap.bindings)
                print(
                    f"{workers:>7} {with_ha!s:>8} {statistics.median(times):>9.3f} "
                    f"{min(times):>7.3f} {count:>8}"
                )


if __name__ == "__main__":
    main()
