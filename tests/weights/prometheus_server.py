"""A throwaway Prometheus on 127.0.0.1 scraping the emulator. I/O: a child process, a port, a dir.

Not a test module. ``start_prometheus`` writes a scrape configuration (the
emulator's ``/_emulator/metrics`` every ``SCRAPE_INTERVAL``), starts Debian's
``prometheus`` on a free loopback port with its storage in the test's
directory and waits for ``/-/ready``; ``wait_for_series`` waits (bounded) until
a query answers for the routers a test needs.
"""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.daemon.etcd_server import free_port

from l3ha.prometheus import PrometheusError, query_by_router

PROMETHEUS_BINARY = "/usr/bin/prometheus"
SCRAPE_INTERVAL = "1s"
START_TIMEOUT = 30.0

#: Bytes per second per router over the last 10 s (ten scrapes at 1 s).
BYTES_RATE = "sum by (router_id) (rate(l3ha_emulator_router_bytes_total[10s]))"
#: Samples per router in that window: ``rate`` divides by the whole window, so it
#: reads low until the window is full of samples.
WINDOW_SAMPLES = "min by (router_id) (count_over_time(l3ha_emulator_router_bytes_total[10s]))"
FULL_WINDOW = 10


def prometheus_binary() -> str | None:
    """Debian's ``prometheus`` server, or None when it is not installed."""
    if Path(PROMETHEUS_BINARY).exists():
        return PROMETHEUS_BINARY
    return shutil.which("prometheus")


@dataclass
class PrometheusServer:
    """One running Prometheus; ``url`` is its HTTP API root."""

    process: subprocess.Popen[bytes]
    port: int
    workdir: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        """Stop it (SIGTERM, then SIGKILL) and wait (idempotent)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process.wait(timeout=10)

    def log_tail(self) -> str:
        return (self.workdir / "prometheus.log").read_text(errors="replace")[-2000:]


def scrape_config(target: str) -> str:
    """A configuration scraping the emulator at ``target`` (``127.0.0.1:PORT``)."""
    return f"""global:
  scrape_interval: {SCRAPE_INTERVAL}
  evaluation_interval: {SCRAPE_INTERVAL}
scrape_configs:
  - job_name: l3ha-emulator
    metrics_path: /_emulator/metrics
    static_configs:
      - targets: ['{target}']
"""


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=0.5) as answer:
            return answer.status == 200
    except OSError:
        return False


def start_prometheus(
    binary: str, workdir: Path, target: str, attempts: int = 3
) -> PrometheusServer:
    """Start Prometheus on a free loopback port; retry when the port was taken meanwhile."""
    config = workdir / "prometheus.yml"
    config.write_text(scrape_config(target), encoding="utf-8")
    for _ in range(attempts):
        port = free_port()
        log = (workdir / "prometheus.log").open("ab")
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline and process.poll() is None:
            if _ready(port):
                return PrometheusServer(process, port, workdir)
            time.sleep(0.1)
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
    tail = (workdir / "prometheus.log").read_text(errors="replace")[-2000:]
    raise RuntimeError(f"prometheus did not start on 127.0.0.1 after {attempts} attempts:\n{tail}")


def wait_for_full_window(server: PrometheusServer, routers: set[str]) -> None:
    """Wait (bounded) until every router has a full ``BYTES_RATE`` window of samples."""
    wait_for_series(
        server,
        WINDOW_SAMPLES,
        lambda counts: routers <= set(counts) and min(counts.values()) >= FULL_WINDOW,
    )


def wait_for_series(
    server: PrometheusServer,
    query: str,
    ready: Callable[[dict[str, float]], bool],
    timeout: float = 30.0,
) -> dict[str, float]:
    """Query every 0.5 s until ``ready(values)`` holds (bounded); the values."""
    deadline = time.monotonic() + timeout
    values: dict[str, float] = {}
    while time.monotonic() < deadline:
        try:
            values = query_by_router(server.url, query, 2.0)
        except PrometheusError:
            values = {}
        if ready(values):
            return values
        time.sleep(0.5)
    raise AssertionError(
        f"Prometheus had no usable answer to {query!r} in {timeout:g} s: {values}\n"
        + server.log_tail()
    )
