"""Benchmark: evacuating one killed agent with l3ha versus a serial baseline, on the emulator.

I/O: runs the emulator in a child process on 127.0.0.1 (its own core, like a
real Neutron server), a clouds.yaml and a journal in a temporary directory,
and prints a table.

Setup: ``--agents`` agents (default 10), ``--routers`` routers (default 1000)
all bound to net-1, which is then killed; the survivors process routers as
the emulator's pre-calibration timing says (8 at a time, ``1.5 s + 0.25 s per port``), with
every time multiplied by ``--scale`` (default 1). Below ~0.5 the executor's
own API and journal work per move (about 4.4 API calls, 5 journal commits), not the
agents, becomes the limit on a small shared machine; the table also shows
the figures converted to full scale.

Measured: l3ha's wall time from the start of the executor until every port
is ACTIVE on its new agent (the executor waits for that), against the lower
bound set by the survivors' capacity (total processing work / (survivors x
agent concurrency)), and a serial baseline in the same run on the same
emulator: one router at a time, unbind, bind, poll its ports until ACTIVE
(neutron-ha-tool's way, polling every 0.1 s), measured on ``--serial-sample``
routers and extrapolated linearly to all of them.

    .venv/bin/python bench/bench_evacuate.py            # full scale, about 80 s
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path

from l3ha.clock import SystemClock
from l3ha.cloud.adapter import NeutronCloud, connect
from l3ha.emulator import Emulator, EmulatorConfig
from l3ha.executor import Executor, ExecutorOptions, MoveOutcome
from l3ha.journal import Journal
from l3ha.model import Plan, Snapshot
from l3ha.planner import PlacementPolicy, plan_evacuate
from l3ha.weights import WeightPolicy

BASE_TIME = 1.5  # the emulator's pre-calibration router_base_time (s), kept so runs compare
PORT_TIME = 0.25  # the emulator's router_port_time (s per port)
CONCURRENCY = 8  # the pre-calibration agent_concurrency (docs/fidelity.md measured 2)
SERIAL_POLL = 0.1  # the serial baseline polls ports finely: the benefit of the doubt


def serve_emulator(cfg: EmulatorConfig, clouds_yaml: str, pipe: Connection) -> None:
    """Child process: run the emulator and obey ``kill HOST`` / ``stop`` from the pipe."""
    emu = Emulator(cfg).start()
    emu.write_clouds_yaml(clouds_yaml)
    pipe.send(emu.agent_ids_by_host())
    while True:
        command, arg = pipe.recv()
        if command == "kill":
            emu.faults.kill_agent(arg)
            pipe.send("ok")
        elif command == "stop":
            emu.stop()
            pipe.send("ok")
            return


def wait_until(check: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            sys.exit(f"bench: timed out waiting for {what}")
        time.sleep(0.05)


def concentrate(cloud: NeutronCloud, snapshot: Snapshot, source: str) -> None:
    """Put every router on ``source`` (set-up only, not measured)."""
    others = [b for b in snapshot.bindings if b.agent_id != source]

    def move(router_id: str, agent_id: str) -> None:
        cloud.unbind(router_id, agent_id)
        cloud.bind(router_id, source)

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda b: move(b.router_id, b.agent_id), others))


def serial_move(
    cloud: NeutronCloud, router_id: str, source: str, target: str, *, host: str, poll: float
) -> float:
    """neutron-ha-tool's way: unbind, bind, wait until every port is ACTIVE on the target."""
    start = time.monotonic()
    cloud.unbind(router_id, source)
    cloud.bind(router_id, target)
    while True:
        ports = cloud.router_ports(router_id)
        if all(p.status == "ACTIVE" and p.host == host for p in ports):
            return time.monotonic() - start
        time.sleep(poll)


def make_plan(snapshot: Snapshot, source: str) -> Plan:
    plan = plan_evacuate(snapshot, source, PlacementPolicy(), WeightPolicy())
    if not isinstance(plan, Plan):
        sys.exit(f"bench: the planner refused: {plan.message}")
    return plan


def run(args: argparse.Namespace) -> None:
    scale = args.scale
    cfg = EmulatorConfig(
        agents=args.agents,
        routers=args.routers,
        report_interval=0.5,
        agent_down_time=2.0,
        router_base_time=BASE_TIME * scale,
        router_port_time=PORT_TIME * scale,
        agent_concurrency=CONCURRENCY,
        seed=1,
    )
    tmp = Path(tempfile.mkdtemp(prefix="l3ha-bench-"))
    clouds = tmp / "clouds.yaml"
    parent, child = mp.Pipe()
    proc = mp.get_context("spawn").Process(target=serve_emulator, args=(cfg, str(clouds), child))
    proc.start()
    try:
        ids = parent.recv()
        os.environ["OS_CLIENT_CONFIG_FILE"] = str(clouds)
        cloud = connect("l3ha-emulator", workers=16)
        measure(args, cloud, ids, parent, tmp)
    finally:
        parent.send(("stop", None))
        parent.recv()
        proc.join(10)
        shutil.rmtree(tmp, ignore_errors=True)


def measure(
    args: argparse.Namespace, cloud: NeutronCloud, ids: dict[str, str], pipe: Connection, tmp: Path
) -> None:
    scale = args.scale
    source = ids["net-1"]
    print(f"setting up: {args.routers} routers onto net-1 of {args.agents} agents ...", flush=True)
    concentrate(cloud, cloud.read_snapshot(), source)
    pipe.send(("kill", "net-1"))
    pipe.recv()
    wait_until(lambda: not cloud.get_agent(source).alive, 30, "net-1 to be dead")
    snapshot = cloud.read_snapshot()
    routers = [b.router_id for b in snapshot.bindings_of_agent(source)]
    ports = cloud.ports_of_routers(routers)
    work = sum(scale * (BASE_TIME + PORT_TIME * len(ports[r])) for r in routers)
    survivors = len(snapshot.agents) - 1
    lower_bound = work / (survivors * CONCURRENCY)
    plan = make_plan(snapshot, source)

    options = ExecutorOptions(
        concurrency=args.concurrency,
        per_target_inflight=args.per_target,
        port_poll_interval=args.poll * scale,
        port_timeout=600,
    )
    executor = Executor(cloud, Journal(tmp / "state"), SystemClock(), options)
    print(f"evacuating {len(plan.moves)} routers with l3ha ...", flush=True)
    started = time.monotonic()
    result = executor.run(plan)
    l3ha_wall = time.monotonic() - started
    moved = result.counts()[MoveOutcome.MOVED.value]
    if moved != len(routers):
        print(f"WARNING: only {moved} of {len(routers)} moved: {result.summary()['counts']}")

    after = cloud.read_snapshot()
    alive = sorted(a.id for a in after.agents if a.alive)
    sample = routers[: args.serial_sample]
    print(f"serial baseline on {len(sample)} routers ...", flush=True)
    serial = []
    for i, router_id in enumerate(sample):
        (binding,) = after.bindings_of_router(router_id)
        target = next(a for a in alive[i % len(alive) :] + alive if a != binding.agent_id)
        host = after.agents_by_id[target].host
        serial.append(
            serial_move(
                cloud, router_id, binding.agent_id, target, host=host, poll=SERIAL_POLL * scale
            )
        )
    serial_total = statistics.mean(serial) * len(routers)

    rows = [
        ("routers evacuated", f"{moved} / {len(routers)}"),
        ("survivors x agent concurrency", f"{survivors} x {CONCURRENCY}"),
        ("time scale factor", f"{scale:g}"),
        ("mean processing per router (s)", f"{work / len(routers):.3f}"),
        ("lower bound: work / capacity (s)", f"{lower_bound:.2f}"),
        ("l3ha wall time, all ports ACTIVE (s)", f"{l3ha_wall:.2f}"),
        ("l3ha / lower bound", f"{l3ha_wall / lower_bound:.2f}x  (target <= 1.3x)"),
        ("serial: mean per router (s)", f"{statistics.mean(serial):.3f}"),
        (f"serial: extrapolated x{len(routers)} (s)", f"{serial_total:.1f}"),
        ("serial / l3ha", f"{serial_total / l3ha_wall:.1f}x  (target >= 10x)"),
        ("l3ha at full scale (s)", f"{l3ha_wall / scale:.1f}"),
        ("serial at full scale (s)", f"{serial_total / scale:.0f}"),
    ]
    width = max(len(k) for k, _ in rows)
    print()
    for key, value in rows:
        print(f"{key:<{width}}  {value}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--routers", type=int, default=1000)
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="multiply every emulated processing time by this (default 1: real times)",
    )
    parser.add_argument("--serial-sample", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--per-target", type=int, default=16)
    parser.add_argument(
        "--poll",
        type=float,
        default=1.0,
        help="l3ha's port poll interval at full scale, seconds (default 1.0, l3ha's default)",
    )
    run(parser.parse_args())


if __name__ == "__main__":
    main()
