"""Benchmark: what reading measured router weights costs at 10,000 routers.

I/O: runs the emulator in a child process (its own core, like a Neutron
server) behind the counting proxy (``bench/counting_proxy.py``), Debian's
``prometheus`` on a free loopback port scraping the emulator's per-router
traffic counters, a temporary directory; prints a table.

Measured, side by side in one run on the same cloud:

- ``--busy-ports``: one paged listing of interface ports (``RouterUsage``),
  against the per-router way (``GET /v2.0/ports?device_id=R`` for every
  router), timed on ``--per-router-sample`` routers and extrapolated;
- ``--busy-fips``: one listing of floating IPs;
- ``--weights-prometheus``: one instant query (``sum by (router_id) (rate(...))``
  over every router's series);
- for scale, the snapshot read every command makes anyway (``read_snapshot``).

    .venv/bin/python bench/bench_weights.py                  # 100 agents, 10,000 routers
    .venv/bin/python bench/bench_weights.py --routers 2000 --agents 20
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sized
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TypeVar

from counting_proxy import CountingProxy  # bench/ is on the path when run as a script
from l3ha.cloud.adapter import NeutronCloud, connect
from l3ha.emulator import Emulator, EmulatorConfig
from l3ha.prometheus import PrometheusError, query_by_router

T = TypeVar("T")
QUERY = "sum by (router_id) (rate(l3ha_emulator_router_bytes_total[1m]))"
SCRAPE = "5s"


def serve(cfg: EmulatorConfig, pipe: Connection) -> None:
    """Child process: run the emulator until ``stop`` comes from the pipe."""
    emu = Emulator(cfg).start()
    pipe.send(emu.url)
    pipe.recv()
    emu.stop()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_prometheus(workdir: Path, target: str) -> tuple[subprocess.Popen[bytes], str]:
    binary = shutil.which("prometheus") or "/usr/bin/prometheus"
    if not Path(binary).exists():
        sys.exit("bench: Debian's prometheus is not installed (scripts/install-system-deps.sh)")
    config = workdir / "prometheus.yml"
    config.write_text(
        f"global:\n  scrape_interval: {SCRAPE}\n  scrape_timeout: {SCRAPE}\n"
        "scrape_configs:\n  - job_name: emulator\n    metrics_path: /_emulator/metrics\n"
        f"    static_configs:\n      - targets: ['{target}']\n",
        encoding="utf-8",
    )
    port = free_port()
    process = subprocess.Popen(
        [binary, f"--config.file={config}", f"--storage.tsdb.path={workdir / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}", "--log.level=error"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    wait(lambda: _ready(url), 30, "prometheus ready")
    return process, url


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/-/ready", timeout=1) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def wait(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            sys.exit(f"bench: timed out waiting for {what}")
        time.sleep(0.5)


def timed(func: Callable[[], T], repeat: int) -> tuple[float, T]:
    """The median wall time of ``repeat`` calls, and the last result."""
    times, result = [], None
    for _ in range(repeat):
        began = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - began)
    return statistics.median(times), result  # type: ignore[return-value]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--routers", type=int, default=10_000)
    parser.add_argument("--per-router-sample", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cfg = EmulatorConfig(agents=args.agents, routers=args.routers, busy=args.routers // 50,
                         hot=args.routers // 50, router_base_time=0.0, router_port_time=0.0,
                         seed=3)  # fmt: skip
    parent, child = mp.Pipe()
    proc = mp.get_context("spawn").Process(target=serve, args=(cfg, child))
    proc.start()
    upstream = parent.recv()
    proxy = CountingProxy(upstream).start()  # counts calls; timings go direct
    with tempfile.TemporaryDirectory(prefix="l3ha-bench-") as tmp:
        clouds = Path(tmp) / "clouds.yaml"
        entry = "  {}:\n    auth_type: none\n    network_endpoint_override: {}\n"
        clouds.write_text(
            "clouds:\n" + entry.format("counted", proxy.url) + entry.format("direct", upstream),
            encoding="utf-8",
        )
        os.environ.update(OS_CLIENT_CONFIG_FILE=str(clouds))
        counted, direct = connect("counted", timeout=300), connect("direct", timeout=300)
        prometheus, url = start_prometheus(Path(tmp), upstream.split("//", 1)[1].rstrip("/"))
        try:
            rows = measure_all(Clouds(counted, direct, proxy), url, args)
        finally:
            prometheus.terminate()
            prometheus.wait(timeout=30)
            parent.send("stop")
            proc.join(timeout=30)
            proxy.stop()
    print(f"\n{args.agents} agents, {args.routers} routers; median of {args.repeat} runs\n")
    print(f"{'reading':44} {'calls':>7} {'seconds':>9}  {'found':>7}")
    for label, calls, seconds, found in rows:
        print(f"{label:44} {calls:7d} {seconds:9.3f}  {found:7d}")


Row = tuple[str, int, float, int]


@dataclass
class Clouds:
    """The same cloud twice: through the counting proxy (calls), and direct (seconds)."""

    counted: NeutronCloud
    direct: NeutronCloud
    proxy: CountingProxy

    def calls(self, read: Callable[[NeutronCloud], object]) -> int:
        self.proxy.reset()
        read(self.counted)
        return sum(self.proxy.counts().values())


def measure_all(clouds: Clouds, url: str, args: argparse.Namespace) -> list[Row]:
    """Every reading of the table: calls counted through the proxy, seconds timed direct."""
    rows: list[Row] = []

    def one(label: str, read: Callable[[NeutronCloud], Sized]) -> None:
        seconds, result = timed(lambda: read(clouds.direct), args.repeat)
        rows.append((label, clouds.calls(read), seconds, len(result)))

    one("snapshot read (every command does it)", lambda c: c.read_snapshot().bindings)
    one("--busy-ports: one listing of interfaces", lambda c: c.usage().interface_counts())
    one("--busy-fips: one listing of floating IPs", lambda c: c.usage().floating_ip_counts())
    sample = [r.id for r in clouds.direct.list_routers()][: args.per_router_sample]
    scale = args.routers / len(sample)
    began = time.perf_counter()
    for router_id in sample:
        clouds.direct.router_ports(router_id)
    seconds = (time.perf_counter() - began) * scale
    calls = clouds.calls(lambda c: [c.router_ports(r) for r in sample])
    rows.append((f"  instead one call per router (x{len(sample)}, scaled)",
                 round(calls * scale), seconds, args.routers))  # fmt: skip
    wait(lambda: _complete(url, args.routers), 180, "a rate for every router")
    seconds, values = timed(lambda: query_by_router(url, QUERY, 60), args.repeat)
    rows.append(("--weights-prometheus: one instant query", 1, seconds, len(values)))
    return rows


def _complete(url: str, routers: int) -> bool:
    try:
        return len(query_by_router(url, QUERY, 30)) >= routers
    except PrometheusError:
        return False


if __name__ == "__main__":
    main()
