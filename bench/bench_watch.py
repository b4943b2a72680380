"""Benchmark: ``l3ha watch`` against Neutron's automatic failover, side by side, on the emulator.

I/O: runs ``l3ha emulator serve`` and ``l3ha watch`` as child processes on
127.0.0.1 (a clouds.yaml, a journal and logs in a temporary directory) and
prints a table.

Two scenarios, each run twice on the same emulator configuration: once with
``l3ha watch`` and Neutron's failover off, once with the emulator's
``--neutron-auto-failover`` (Neutron 29's ``allow_automatic_l3agent_failover``,
rollback and per-move RPC included) and no l3ha.

- **kill**: one agent dies. Measured: seconds from the kill until every router
  it hosted forwards again (the emulator's data-plane view, polled every
  0.1 s), router-seconds of outage, moves. For l3ha also its evacuation time
  (first move started to the last router forwarding), so recovery can be held
  to ``dead_after + evacuation + 10%``.
- **broker**: the message bus restarts: no heartbeats for 3 x agent_down_time,
  then the agents reconnect one by one over one agent_down_time. Measured after
  the dust settles: routers moved and router-seconds of outage caused.

Time is scaled down (heartbeats every 1 s, agent_down_time 5 s, l3ha's
dead-after 5 s) so a run takes minutes; the ratios are what matter.

    .venv/bin/python bench/bench_watch.py              # about 3 minutes
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

REPORT_INTERVAL = 1.0
DOWN_TIME = 5.0
RUN = "from l3ha.cli.main import run; run()"


@dataclass
class Outcome:
    """One run of one scenario."""

    who: str
    scenario: str
    recovery_s: float | None
    evacuation_s: float | None
    moved: int
    outage_router_s: float


class Cloud:
    """An ``l3ha emulator serve`` child process and its HTTP hooks."""

    def __init__(self, workdir: Path, args: argparse.Namespace, neutron: bool) -> None:
        self.clouds = workdir / "clouds.yaml"
        flags = [
            "--port", "0", "--agents", str(args.agents), "--routers", str(args.routers),
            "--busy", str(args.routers // 20), "--report-interval", str(REPORT_INTERVAL),
            "--agent-down-time", str(DOWN_TIME), "--router-base-time", "0.3",
            "--router-port-time", "0.05", "--seed", "5", "--clouds-yaml", str(self.clouds),
        ]  # fmt: skip
        if neutron:
            flags.append("--neutron-auto-failover")
        self.log = (workdir / "emulator.log").open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", RUN, "emulator", "serve", *flags],
            stdout=subprocess.PIPE, stderr=self.log, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()

    def get(self, path: str) -> dict[str, object]:
        with urllib.request.urlopen(self.url.rstrip("/") + path, timeout=10) as answer:
            return json.loads(answer.read())  # type: ignore[no-any-return]

    def fault(self, **doc: object) -> None:
        body = json.dumps(doc).encode()
        request = urllib.request.Request(
            self.url.rstrip("/") + "/_emulator/faults", data=body, method="POST",
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        urllib.request.urlopen(request, timeout=10).close()

    def dataplane(self) -> dict[str, dict[str, object]]:
        return self.get("/_emulator/dataplane")  # type: ignore[return-value]

    def bindings(self) -> dict[str, frozenset[str]]:
        from l3ha.cloud.adapter import connect

        os.environ.update(OS_CLIENT_CONFIG_FILE=str(self.clouds), OS_CLOUD="l3ha-emulator")
        snapshot = connect().read_snapshot()
        hosts = {a.id: a.host for a in snapshot.agents}
        return {
            r.id: frozenset(hosts[b.agent_id] for b in snapshot.bindings_of_router(r.id))
            for r in snapshot.routers
        }

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=20)
        self.log.close()


def start_watch(cloud: Cloud, workdir: Path) -> tuple[subprocess.Popen[bytes], Path]:
    log = workdir / "watch.log"
    env = dict(os.environ, OS_CLIENT_CONFIG_FILE=str(cloud.clouds), OS_CLOUD="l3ha-emulator",
               L3HA_STATE_DIR=str(workdir / "state"))  # fmt: skip
    flags = [
        "--interval", "0.5", "--dead-after", str(DOWN_TIME), "--report-interval",
        str(REPORT_INTERVAL), "--metrics-port", "0", "--log-format", "json",
        "--port-timeout", "120",
    ]  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-c", RUN, "watch", *flags], env=env,
        stdout=log.open("wb"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    wait(lambda: '"ready"' in log.read_text(errors="replace"), 30)
    return proc, log


def wait(check: Callable[[], bool], timeout: float, step: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(step)
    return check()


def downtime(view: dict[str, dict[str, object]], routers: set[str] | None = None) -> float:
    return sum(
        float(str(d["downtime_s"])) for r, d in view.items() if routers is None or r in routers
    )


def first_move_ts(log: Path) -> float | None:
    stamps = []
    for line in log.read_text(errors="replace").splitlines():
        if '"event": "action"' in line:
            doc = json.loads(line)
            stamps.append(datetime.fromisoformat(doc["ts"].replace("Z", "+00:00")).timestamp())
    return min(stamps) if stamps else None


@contextmanager
def setting(
    args: argparse.Namespace, neutron: bool
) -> Iterator[tuple[Cloud, tuple[subprocess.Popen[bytes], Path] | None]]:
    """An emulated cloud, with ``l3ha watch`` beside it unless Neutron fails over."""
    with tempfile.TemporaryDirectory(prefix="l3ha-bench-") as tmp:
        work = Path(tmp)
        cloud = Cloud(work, args, neutron)
        watch = None if neutron else start_watch(cloud, work)
        try:
            time.sleep(2 * REPORT_INTERVAL)
            yield cloud, watch
        finally:
            if watch is not None:
                watch[0].terminate()
                watch[0].wait(timeout=60)
            cloud.stop()


def kill(args: argparse.Namespace, neutron: bool) -> Outcome:
    with setting(args, neutron) as (cloud, watch):
        before = cloud.bindings()
        victims = {r for r, hosts in before.items() if "net-1" in hosts}
        base = downtime(cloud.dataplane())
        killed = time.time()
        cloud.fault(fault="kill-agent", host="net-1")

        def recovered() -> bool:
            view = cloud.dataplane()
            return all(bool(view[r]["reachable"]) for r in victims)

        wait(lambda: not recovered(), 5)
        done = wait(recovered, args.timeout)
        recovery = time.time() - killed if done else None
        moved = sum(1 for r, h in cloud.bindings().items() if h != before[r])
        outage = downtime(cloud.dataplane()) - base
        evacuation = None
        if watch is not None and recovery is not None:
            started = first_move_ts(watch[1])
            evacuation = killed + recovery - started if started else None
        who = "neutron" if neutron else "l3ha"
        return Outcome(who, "kill", recovery, evacuation, moved, outage)


def broker(args: argparse.Namespace, neutron: bool) -> Outcome:
    with setting(args, neutron) as (cloud, _watch):
        before = cloud.bindings()
        base = downtime(cloud.dataplane())
        cloud.fault(fault="broker-outage", seconds=3 * DOWN_TIME, spread=DOWN_TIME)
        time.sleep(3 * DOWN_TIME + DOWN_TIME + 4 * DOWN_TIME)  # outage, spread, settling
        wait(lambda: int(str(cloud.get("/_emulator/state")["duplicated"])) == 0, 60)
        moved = sum(1 for r, h in cloud.bindings().items() if h != before[r])
        outage = downtime(cloud.dataplane()) - base
        who = "neutron" if neutron else "l3ha"
        return Outcome(who, "broker", None, None, moved, outage)


def fmt(value: float | None, unit: str = "") -> str:
    return "n/a" if value is None else f"{value:.1f}{unit}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--routers", type=int, default=300)
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    results = [kill(args, False), kill(args, True), broker(args, False), broker(args, True)]
    print(f"{args.agents} agents, {args.routers} routers; heartbeat {REPORT_INTERVAL:g} s, "
          f"agent_down_time = l3ha dead-after = {DOWN_TIME:g} s")  # fmt: skip
    print(f"{'scenario':8} {'who':8} {'recovery_s':>11} {'evacuation_s':>13} "
          f"{'moved':>6} {'outage_router_s':>16}")  # fmt: skip
    for r in results:
        print(f"{r.scenario:8} {r.who:8} {fmt(r.recovery_s):>11} {fmt(r.evacuation_s):>13} "
              f"{r.moved:6d} {r.outage_router_s:16.1f}")  # fmt: skip
    l3ha = results[0]
    if l3ha.recovery_s is not None and l3ha.evacuation_s is not None:
        bound = (DOWN_TIME + l3ha.evacuation_s) * 1.1
        print(f"l3ha recovery {l3ha.recovery_s:.1f} s vs dead-after + evacuation + 10% = "
              f"{bound:.1f} s: {'met' if l3ha.recovery_s <= bound else 'MISSED'}")  # fmt: skip
    if results[1].recovery_s and l3ha.recovery_s:
        print(f"Neutron / l3ha recovery time: {results[1].recovery_s / l3ha.recovery_s:.2f}x")


if __name__ == "__main__":
    main()
