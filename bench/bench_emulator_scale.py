"""Emulator scale benchmark: build a large cloud, measure memory and API latency.

I/O: serves the emulator on 127.0.0.1 (ephemeral port) and calls it with http.client.
Prints a table. Defaults: 1,000 agents, 50,000 routers (5,000 HA, 500 busy), 3 AZs,
20 samples per call.

    .venv/bin/python bench/bench_emulator_scale.py [--agents N] [--routers N] [--samples N]
"""

from __future__ import annotations

import argparse
import http.client
import json
import resource
import statistics
import time
from collections.abc import Callable

from l3ha.emulator import Emulator, EmulatorConfig


def rss_mib() -> float:
    """Current resident set size of this process (Linux /proc)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed_get(port: int, path: str) -> tuple[float, int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        started = time.perf_counter()
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read()
        return time.perf_counter() - started, response.status, body
    finally:
        conn.close()


def sample(port: int, path: Callable[[int], str], samples: int) -> tuple[float, float, int]:
    """p50 and p95 latency in ms of ``samples`` GETs, and the size of the last body."""
    times = []
    size = 0
    for i in range(samples):
        seconds, status, body = timed_get(port, path(i))
        if status != 200:
            raise SystemExit(f"GET {path(i)} answered {status}: {body[:200]!r}")
        times.append(seconds * 1000)
        size = len(body)
    times.sort()
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    return statistics.median(times), p95, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--routers", type=int, default=50000)
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()
    samples = max(1, min(args.samples, 200))

    base_rss = rss_mib()
    started = time.perf_counter()
    cfg = EmulatorConfig(
        agents=args.agents,
        routers=args.routers,
        ha_routers=args.routers // 10,
        busy=args.routers // 100,
        azs=3,
    )
    emu = Emulator(cfg).start()
    build_s = time.perf_counter() - started
    try:
        port = emu.port
        agent_id = emu.agent_ids_by_host()["net-1"]
        first_page = json.loads(timed_get(port, "/v2.0/routers?limit=100")[2])["routers"]
        marker = first_page[-1]["id"]
        rows = [
            ("GET /v2.0/agents", *sample(port, lambda i: "/v2.0/agents", samples)),
            (
                "GET /v2.0/agents?alive=true&fields=id&fields=host",
                *sample(port, lambda i: "/v2.0/agents?alive=true&fields=id&fields=host", samples),
            ),
            (
                "GET /v2.0/agents/{id}/l3-routers",
                *sample(port, lambda i: f"/v2.0/agents/{agent_id}/l3-routers", samples),
            ),
            (
                "GET /v2.0/routers?limit=100",
                *sample(port, lambda i: "/v2.0/routers?limit=100", samples),
            ),
            (
                "GET /v2.0/routers?limit=100&marker=M",
                *sample(port, lambda i: f"/v2.0/routers?limit=100&marker={marker}", samples),
            ),
            (
                "GET /v2.0/routers/{id}/l3-agents",
                *sample(
                    port, lambda i: f"/v2.0/routers/{first_page[i % 100]['id']}/l3-agents", samples
                ),
            ),
        ]
    finally:
        emu.stop()

    print(
        f"emulator scale: {args.agents} agents, {args.routers} routers "
        f"({cfg.ha_routers} HA, {cfg.busy} busy), {samples} samples per call"
    )
    print(f"{'build + start':<52} {build_s:9.2f} s")
    print(
        f"{'RSS now / peak (process)':<52} {rss_mib():6.0f} / {peak_rss_mib():.0f} MiB"
        f"  (before build {base_rss:.0f} MiB)"
    )
    print(f"{'call':<52} {'p50 ms':>9} {'p95 ms':>9} {'bytes':>10}")
    for name, p50, p95, size in rows:
        print(f"{name:<52} {p50:9.1f} {p95:9.1f} {size:10d}")


if __name__ == "__main__":
    main()
