"""Benchmark: API calls per move and evacuation time on a slow Neutron, side by side.

I/O: runs the emulator and, in front of it, the project's counting, delaying
proxy (``bench/counting_proxy.py``) in a child process on 127.0.0.1 (the
server side: its own process and core, so that neither competes with l3ha for
this process's interpreter), a clouds.yaml and a journal in a temporary
directory, and prints a table.

For every size (``--sizes``, default 30, 100 and 1000 routers) and every added
latency (``--delays``, default 0, 50 and 100 ms per call) a fresh emulator
with ``--agents`` agents (default 10) is set up with every router on net-1
(through the emulator directly: not counted, not delayed), net-1 is killed,
and ``l3ha evacuate net-1`` runs in this process exactly as the command line
builds it (its parser, its defaults: canary, ``--concurrency``,
``--api-rate``, waiting for every port to be ACTIVE), talking to the proxy.

Printed per run: API calls per move by kind (the snapshot read and the final
check included), total time from the start of the command until every port
is ACTIVE, the capacity lower bound and the ratio to it, and the ratio to the
same size with no added latency. The lower bound is what the survivors'
processing alone needs whatever the plan: the largest of total work /
(survivors x agent concurrency), the slowest single router, and -- since some
survivor gets at least ceil(routers / survivors) routers -- that many routers
in waves of the agent concurrency, each wave at least the quickest router.

    .venv/bin/python bench/bench_api_economy.py                # all nine runs, ~4 min
    .venv/bin/python bench/bench_api_economy.py --sizes 30 100  # the small ones, ~1 min
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from counting_proxy import CountingProxy  # bench/ is on the path when run as a script
from l3ha.cli.common import load_weight_policy, open_cloud
from l3ha.cli.execution import executor_options
from l3ha.cli.main import build_parser
from l3ha.cli.planning import action_request
from l3ha.clock import SystemClock
from l3ha.cloud.adapter import NeutronCloud, connect
from l3ha.emulator import Emulator, EmulatorConfig
from l3ha.journal import Journal
from l3ha.operations import Action, Executed, OperationContext, run_action

BASE_TIME = 1.5  # the emulator's pre-calibration router_base_time (s), kept so runs compare
PORT_TIME = 0.25  # the emulator's router_port_time (s per port)
AGENT_CONCURRENCY = 8  # the pre-calibration agent_concurrency (docs/fidelity.md measured 2)
#: How the proxy's request shapes are grouped into columns.
KINDS = (
    ("DELETE", "DELETE /v2.0/agents/{id}/l3-routers/{id}"),
    ("POST", "POST /v2.0/agents/{id}/l3-routers"),
    ("GET l3-agents", "GET /v2.0/routers/{id}/l3-agents"),
    ("GET agents", "GET /v2.0/agents"),
    ("GET agent", "GET /v2.0/agents/{id}"),
    ("GET ports", "GET /v2.0/ports"),
)


def serve_emulator(cfg: EmulatorConfig, delay: float, pipe: Connection) -> None:
    """Child process: the emulator and the proxy; obeys ``kill HOST``, ``reset``, ``counts``
    and ``stop`` from the pipe."""
    emu = Emulator(cfg).start()
    proxy = CountingProxy(emu.url, delay=delay).start()
    pipe.send((emu.url, proxy.url, emu.agent_ids_by_host()))
    while True:
        command, arg = pipe.recv()
        if command == "kill":
            emu.faults.kill_agent(arg)
            pipe.send("ok")
        elif command == "reset":
            proxy.reset()
            pipe.send("ok")
        elif command == "counts":
            pipe.send(dict(proxy.counts()))
        elif command == "stop":
            proxy.stop()
            emu.stop()
            pipe.send("ok")
            return


def write_clouds(path: Path, urls: dict[str, str]) -> None:
    """A clouds.yaml naming each URL (no keystone: the emulator answers as noauth Neutron)."""
    entries = "".join(
        f"  {name}:\n    auth_type: none\n    network_endpoint_override: {url}\n"
        for name, url in urls.items()
    )
    path.write_text("clouds:\n" + entries, encoding="utf-8")


def concentrate(cloud: NeutronCloud, source: str) -> list[str]:
    """Put every router on ``source`` (set-up only, not measured); their ids."""
    snapshot = cloud.read_snapshot()
    others = [b for b in snapshot.bindings if b.agent_id != source]

    def move(router_id: str, agent_id: str) -> None:
        cloud.unbind(router_id, agent_id)
        cloud.bind(router_id, source)

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda b: move(b.router_id, b.agent_id), others))
    return [r.id for r in snapshot.routers]


@dataclass
class Measured:
    routers: int
    delay_ms: int
    moved: int
    seconds: float
    lower_bound: float
    calls: Counter[str]

    def per_move(self, shape: str | None = None) -> float:
        total = self.calls[shape] if shape else sum(self.calls.values())
        return total / max(self.moved, 1)


def lower_bound(port_counts: list[int], survivors: int, scale: float) -> float:
    """The capacity lower bound of the module docstring."""
    times = [scale * (BASE_TIME + PORT_TIME * n) for n in port_counts]
    slots = survivors * AGENT_CONCURRENCY
    busiest = math.ceil(len(times) / survivors)
    waves = math.ceil(busiest / AGENT_CONCURRENCY)
    return max(sum(times) / slots, *times, waves * min(times))


def measure(routers: int, delay: float, args: argparse.Namespace, tmp: Path) -> Measured:
    cfg = EmulatorConfig(
        agents=args.agents,
        routers=routers,
        report_interval=0.5,
        agent_down_time=2.0,
        router_base_time=BASE_TIME * args.scale,
        router_port_time=PORT_TIME * args.scale,
        agent_concurrency=AGENT_CONCURRENCY,
        seed=1,
    )
    parent, child = mp.Pipe()
    proc = mp.get_context("spawn").Process(target=serve_emulator, args=(cfg, delay, child))
    proc.start()
    try:
        url, proxy_url, ids = parent.recv()
        return _evacuate(_Setup(url, proxy_url, ids, parent), routers, delay, args, tmp)
    finally:
        parent.send(("stop", None))
        parent.recv()
        proc.join(30)


@dataclass
class _Setup:
    url: str
    proxy_url: str
    ids: dict[str, str]
    pipe: Connection


def _evacuate(
    setup: _Setup, routers: int, delay: float, args: argparse.Namespace, tmp: Path
) -> Measured:
    ids, pipe = setup.ids, setup.pipe
    clouds = tmp / "clouds.yaml"
    write_clouds(clouds, {"direct": setup.url, "slow": setup.proxy_url})
    os.environ["OS_CLIENT_CONFIG_FILE"] = str(clouds)
    direct = connect("direct", workers=16)
    source = ids["net-1"]
    router_ids = concentrate(direct, source)
    pipe.send(("kill", "net-1"))
    pipe.recv()
    deadline = time.monotonic() + 30
    while direct.get_agent(source).alive:
        if time.monotonic() > deadline:
            sys.exit("bench: net-1 did not die")
        time.sleep(0.05)
    ports = direct.ports_of_routers(router_ids)
    bound = lower_bound([len(ports[r]) for r in router_ids], len(ids) - 1, args.scale)
    state = tmp / f"state-{routers}-{int(delay * 1000)}"
    cli = ["evacuate", "net-1", "--os-cloud", "slow", "--state-dir", str(state)]
    cli += args.cli.split()
    parsed = build_parser().parse_args(cli)
    request = action_request(
        Action.EVACUATE, parsed, load_weight_policy(parsed), executor_options(parsed)
    )
    pipe.send(("reset", None))
    pipe.recv()
    started = time.monotonic()
    cloud = open_cloud(parsed)
    with Journal(state) as journal:
        result = run_action(OperationContext(cloud, journal, SystemClock()), request)
    seconds = time.monotonic() - started
    pipe.send(("counts", None))
    calls: Counter[str] = Counter(pipe.recv())
    moved = sum(
        step.run.counts().get("moved", 0) for step in result.steps if isinstance(step, Executed)
    )
    if moved != routers:
        print(f"WARNING: {routers} routers, {delay * 1000:.0f} ms: moved {moved}", flush=True)
    return Measured(routers, round(delay * 1000), moved, seconds, bound, calls)


def print_table(runs: list[Measured]) -> None:
    header = ["routers", "ms/call", *(k for k, _ in KINDS), "other", "calls/move"]
    header += ["time s", "bound s", "x bound", "x no-delay"]
    rows = []
    base = {r.routers: r.seconds for r in runs if r.delay_ms == 0}
    for run in runs:
        known = sum(run.calls[shape] for _, shape in KINDS)
        other = (sum(run.calls.values()) - known) / max(run.moved, 1)
        rows.append(
            [
                str(run.routers),
                str(run.delay_ms),
                *(f"{run.per_move(shape):.2f}" for _, shape in KINDS),
                f"{other:.2f}",
                f"{run.per_move():.2f}",
                f"{run.seconds:.2f}",
                f"{run.lower_bound:.2f}",
                f"{run.seconds / run.lower_bound:.2f}",
                f"{run.seconds / base[run.routers]:.2f}" if run.routers in base else "-",
            ]
        )
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print("  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
    for row in rows:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
    print("\nper move: API calls of each kind per router moved; other: snapshot reads")
    print("x bound: time / capacity lower bound; x no-delay: time / same size at 0 ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[30, 100, 1000])
    parser.add_argument("--delays", type=float, nargs="+", default=[0.0, 50.0, 100.0])
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="multiply every emulated processing time by this (default 1: real times)",
    )
    parser.add_argument(
        "--cli",
        default="",
        metavar="FLAGS",
        help="extra 'l3ha evacuate' flags, e.g. '--concurrency 8 --api-rate 50' (default: none)",
    )
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="l3ha-bench-api-"))
    runs: list[Measured] = []
    try:
        for routers in args.sizes:
            for delay_ms in args.delays:
                print(f"evacuating {routers} routers, {delay_ms:g} ms per call ...", flush=True)
                runs.append(measure(routers, delay_ms / 1000, args, tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print()
    print_table(runs)


if __name__ == "__main__":
    main()
