"""Benchmark of ``l3ha probe``: sample-start lateness and outage measurement error.

I/O: TCP listeners on 127.0.0.1 (in a child process), and as root two network
namespaces (``l3ha-pr-bench-*``, 169.254.72.0/24) for address-removal outages.
Prints a table. Run: ``.venv/bin/python bench/bench_probe.py [--seconds S]``.

- lateness: start of each sample minus its due time on the grid, at 10 ms with
  5 TCP targets and at 1 s with 1,000 TCP targets;
- outage error: measured window minus induced window (address removed for
  1 s in a namespace as root, else a listener stopped for 1 s), over TCP.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import multiprocessing
import os
import selectors
import socket
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from l3ha.probe.analysis import percentile
from l3ha.probe.runner import Probe, ProbeConfig, ProbeResult
from l3ha.probe.targets import parse_target

CLONE_NEWNET = 0x40000000


def serve_listeners(count: int, ports: Any, ready: Any, stop: Any) -> None:
    """Child process: ``count`` listeners on 127.0.0.1 that accept and close."""
    import resource

    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    selector = selectors.DefaultSelector()
    for index in range(count):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        sock.setblocking(False)
        ports[index] = sock.getsockname()[1]
        selector.register(sock, selectors.EVENT_READ)
    ready.set()
    while not stop.is_set():
        for key, _ in selector.select(0.2):
            with contextlib.suppress(OSError):
                conn, _ = key.fileobj.accept()  # type: ignore[union-attr]
                conn.close()


@contextlib.contextmanager
def listeners(count: int) -> Iterator[list[int]]:
    ctx = multiprocessing.get_context("fork")
    ports = ctx.Array("i", count)
    ready, stop = ctx.Event(), ctx.Event()
    child = ctx.Process(target=serve_listeners, args=(count, ports, ready, stop), daemon=True)
    child.start()
    ready.wait(30)
    try:
        yield list(ports)
    finally:
        stop.set()
        child.join(5)


def run_probe(config: ProbeConfig, during: Callable[[Probe], Any] | None = None) -> ProbeResult:
    probe = Probe(config)
    worker = None
    if during is not None:
        worker = threading.Thread(target=during, args=(probe,), daemon=True)
        worker.start()
    result = probe.run()
    if worker is not None:
        worker.join()
    return result


def lateness_row(label: str, targets: int, interval: float, seconds: float) -> dict[str, Any]:
    with listeners(targets) as ports:
        specs = tuple(parse_target("tcp", f"127.0.0.1:{p}") for p in ports)
        config = ProbeConfig(
            specs, interval=interval, timeout=min(1.0, interval * 10 + 0.5), duration=seconds
        )
        started = time.process_time()
        result = run_probe(config)
        cpu = time.process_time() - started
    late = sorted(result.lateness)
    failed = sum(t.failed for t in result.trackers)
    return {
        "case": label,
        "samples": len(late),
        "median_ms": (percentile(late, 50) or 0) * 1000,
        "p99_ms": (percentile(late, 99) or 0) * 1000,
        "max_ms": late[-1] * 1000,
        "failed": failed,
        "skipped": result.grid.skipped,
        "cpu_pct": 100 * cpu / seconds,
    }


# --- outage error -----------------------------------------------------------------------


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


def enter_netns(name: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns")
    finally:
        os.close(fd)


@contextlib.contextmanager
def namespaces() -> Iterator[tuple[str, str]]:
    client, target = "l3ha-pr-bench-c", "l3ha-pr-bench-t"
    for ns in (client, target):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
    try:
        ip("netns", "add", client)
        ip("netns", "add", target)
        ip(
            "-n",
            client,
            "link",
            "add",
            "l3prbc",
            "type",
            "veth",
            "peer",
            "name",
            "l3prbt",
            "netns",
            target,
        )
        ip("-n", client, "addr", "add", "169.254.72.1/24", "dev", "l3prbc")
        ip("-n", target, "addr", "add", "169.254.72.2/24", "dev", "l3prbt")
        ip("-n", client, "link", "set", "l3prbc", "up")
        ip("-n", target, "link", "set", "l3prbt", "up")
        yield client, target
    finally:
        for ns in (client, target):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def netns_listener(target_ns: str, stop: threading.Event) -> None:
    enter_netns(target_ns)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("169.254.72.2", 7002))
    sock.listen(128)
    sock.settimeout(0.2)
    while not stop.is_set():
        with contextlib.suppress(OSError):
            conn, _ = sock.accept()
            conn.close()
    sock.close()


def outage_error_netns(interval: float, repeats: int) -> list[float]:
    errors = []
    with namespaces() as (client, target):
        stop = threading.Event()
        threading.Thread(target=netns_listener, args=(target, stop), daemon=True).start()
        time.sleep(0.2)
        for _ in range(repeats):
            holder: dict[str, Any] = {}

            def in_client(holder: dict[str, Any] = holder) -> None:
                enter_netns(client)
                config = ProbeConfig(
                    (parse_target("tcp", "169.254.72.2:7002"),),
                    interval=interval,
                    timeout=0.3,
                    duration=2.2,
                )
                holder["result"] = run_probe(config, induce_addr(target, holder))

            worker = threading.Thread(target=in_client)
            worker.start()
            worker.join()
            errors.append(window(holder["result"]) - holder["induced"])
        stop.set()
    return errors


def induce_addr(target: str, holder: dict[str, Any]) -> Callable[[Probe], None]:
    def act(probe: Probe) -> None:
        time.sleep(0.6)
        a0 = time.monotonic()
        ip("-n", target, "addr", "del", "169.254.72.2/24", "dev", "l3prbt")
        a1 = time.monotonic()
        time.sleep(1.0)
        b0 = time.monotonic()
        ip("-n", target, "addr", "add", "169.254.72.2/24", "dev", "l3prbt")
        holder["induced"] = (b0 + time.monotonic()) / 2 - (a0 + a1) / 2

    return act


def outage_error_listener(interval: float, repeats: int) -> list[float]:
    errors = []
    for _ in range(repeats):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.listen(128)
        holder: dict[str, Any] = {"sock": sock}

        def act(probe: Probe, holder: dict[str, Any] = holder, port: int = port) -> None:
            time.sleep(0.6)
            a = time.monotonic()
            holder["sock"].close()
            time.sleep(1.0)
            fresh = socket.socket()
            fresh.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            fresh.bind(("127.0.0.1", port))
            fresh.listen(128)
            holder["induced"] = time.monotonic() - a
            holder["sock"] = fresh

        config = ProbeConfig(
            (parse_target("tcp", f"127.0.0.1:{port}"),),
            interval=interval,
            timeout=0.3,
            duration=2.2,
        )
        result = run_probe(config, act)
        holder["sock"].close()
        errors.append(window(result) - holder["induced"])
    return errors


def window(result: ProbeResult) -> float:
    outages = result.trackers[0].all_outages()
    if len(outages) != 1:
        return float("nan")
    return outages[0].duration(result.until)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of lateness runs")
    parser.add_argument("--targets", type=int, default=1000, help="targets of the 1 Hz run")
    parser.add_argument("--repeats", type=int, default=3, help="induced outages per interval")
    args = parser.parse_args()
    rows = [
        lateness_row("10 ms x 5 TCP", 5, 0.01, args.seconds),
        lateness_row(f"1 s x {args.targets} TCP", args.targets, 1.0, args.seconds),
    ]
    print(
        f"{'case':<18} {'samples':>8} {'median ms':>10} {'p99 ms':>8} {'max ms':>8} "
        f"{'failed':>7} {'skipped':>8} {'cpu %':>6}"
    )
    for r in rows:
        print(
            f"{r['case']:<18} {r['samples']:>8} {r['median_ms']:>10.3f} {r['p99_ms']:>8.3f} "
            f"{r['max_ms']:>8.3f} {r['failed']:>7} {r['skipped']:>8} {r['cpu_pct']:>6.1f}"
        )
    how = "netns addr del/add" if os.geteuid() == 0 else "listener stop/start"
    print(f"\nmeasured - induced outage (1.0 s, TCP, {how}), {args.repeats} runs each:")
    print(f"{'interval':>9} {'errors ms':<30} {'mean |err| ms':>14} {'max |err| ms':>13}")
    for interval in (0.01, 0.1):
        if os.geteuid() == 0:
            errors = outage_error_netns(interval, args.repeats)
        else:
            errors = outage_error_listener(interval, args.repeats)
        shown = ", ".join(f"{e * 1000:+.1f}" for e in errors)
        absolute = [abs(e) * 1000 for e in errors]
        print(
            f"{interval * 1000:>7.0f}ms {shown:<30} {statistics.mean(absolute):>14.1f} "
            f"{max(absolute):>13.1f}"
        )


if __name__ == "__main__":
    main()
