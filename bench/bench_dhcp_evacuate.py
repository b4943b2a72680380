"""Benchmark: evacuating one killed DHCP agent with l3ha versus a serial baseline, on the emulator.

I/O: runs the emulator in a child process on 127.0.0.1 (its own core, like a
real Neutron server), a clouds.yaml and a journal in a temporary directory,
and prints a table.

Setup: ``--agents`` network nodes (default 10) with a DHCP agent each and
``--networks`` networks (default 1000), all put on net-1's DHCP agent, which
is then killed; the 9 survivors set networks up as the emulator's defaults
say (``dhcp_concurrency`` 4 at a time, ``dhcp_network_time`` 1 s each), with
every time multiplied by ``--scale`` (default 1).

Measured, side by side in one run on the same emulator:

- l3ha: the DHCP executor's wall time from its start until every network is
  on a survivor with its DHCP port ACTIVE there and removed from net-1 (make
  before break: it waits for that before the removal);
- the lower bound set by the survivors' capacity: total set-up work /
  (survivors x DHCP agent concurrency);
- a serial baseline: one network at a time, add it to a survivor, poll its
  DHCP port until ACTIVE (every 0.1 s: the benefit of the doubt), remove it
  from net-1 — the shape of an upgrade script calling neutron-ha-tool's
  ``--dhcp-agent-evacuate`` — on ``--serial-sample`` networks, extrapolated
  linearly to all of them.

    .venv/bin/python bench/bench_dhcp_evacuate.py            # full scale, about 90 s
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
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path

from l3ha.clock import SystemClock
from l3ha.cloud.adapter import connect
from l3ha.cloud.dhcp import NeutronDhcp
from l3ha.dhcp_model import DhcpSnapshot
from l3ha.emulator import Emulator, EmulatorConfig
from l3ha.executor import ExecutorOptions
from l3ha.executor.dhcp import DhcpExecutor, DhcpOutcome
from l3ha.executor.dhcp_steps import serving_port
from l3ha.journal import Journal
from l3ha.operations.dhcp import fallback_targets
from l3ha.planner.dhcp import DhcpPolicy, plan_dhcp_evacuate

NETWORK_TIME = 1.0  # emulator default dhcp_network_time (s per network set-up)
CONCURRENCY = 4  # emulator default dhcp_concurrency
SERIAL_POLL = 0.1


def serve_emulator(cfg: EmulatorConfig, clouds_yaml: str, pipe: Connection) -> None:
    """Child process: run the emulator and obey ``kill HOST`` / ``stop`` from the pipe."""
    emu = Emulator(cfg).start()
    emu.write_clouds_yaml(clouds_yaml)
    pipe.send("ready")
    while True:
        command, arg = pipe.recv()
        if command == "kill":
            emu.faults.kill_agent(arg)
            pipe.send("ok")
        elif command == "stop":
            emu.stop()
            pipe.send("ok")
            return


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            sys.exit(f"bench: timed out waiting for {what}")
        time.sleep(0.1)


def concentrate(dhcp: NeutronDhcp, snapshot: DhcpSnapshot, source: str) -> None:
    """Put every network on ``source`` only (set-up, not measured)."""

    def move(network_id: str) -> None:
        hosts = snapshot.agents_of_network(network_id)
        if source not in hosts:
            dhcp.add_network_to_agent(network_id, source)
        for agent_id in hosts:
            if agent_id != source:
                dhcp.remove_network_from_agent(network_id, agent_id)

    tenant = [n.id for n in snapshot.networks if n.needs_dhcp]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(move, tenant))


def serial_move(dhcp: NeutronDhcp, network_id: str, source: str, target: str, host: str) -> float:
    """Add, poll the DHCP port until ACTIVE on the target, remove from the source."""
    start = time.monotonic()
    dhcp.add_network_to_agent(network_id, target)
    while serving_port(dhcp.dhcp_ports(network_id), network_id, host) is None:
        time.sleep(SERIAL_POLL)
    dhcp.remove_network_from_agent(network_id, source)
    return time.monotonic() - start


def run(args: argparse.Namespace) -> None:
    cfg = EmulatorConfig(
        agents=args.agents,
        routers=args.agents,
        dhcp_agents=args.agents,
        networks=args.networks,
        report_interval=0.5,
        agent_down_time=2.0,
        dhcp_network_time=NETWORK_TIME * args.scale,
        dhcp_concurrency=CONCURRENCY,
        seed=1,
    )
    tmp = Path(tempfile.mkdtemp(prefix="l3ha-bench-"))
    clouds = tmp / "clouds.yaml"
    parent, child = mp.Pipe()
    proc = mp.get_context("spawn").Process(target=serve_emulator, args=(cfg, str(clouds), child))
    proc.start()
    try:
        parent.recv()
        os.environ["OS_CLIENT_CONFIG_FILE"] = str(clouds)
        dhcp = NeutronDhcp(connect("l3ha-emulator", workers=16))
        measure(args, dhcp, parent, tmp)
    finally:
        parent.send(("stop", None))
        parent.recv()
        proc.join(10)
        shutil.rmtree(tmp, ignore_errors=True)


def measure(args: argparse.Namespace, dhcp: NeutronDhcp, pipe: Connection, tmp: Path) -> None:
    snapshot = dhcp.read_dhcp_snapshot()
    source = snapshot.find_agent("net-1").id
    print(f"setting up: {args.networks} networks onto net-1 of {args.agents} ...", flush=True)
    concentrate(dhcp, snapshot, source)
    pipe.send(("kill", "net-1"))
    pipe.recv()
    wait_until(lambda: not dhcp.read_dhcp_snapshot().find_agent(source).alive, 30, "net-1 dead")
    snapshot = dhcp.read_dhcp_snapshot()
    networks = list(snapshot.networks_of_agent(source))
    survivors = len(snapshot.agents) - 1
    work = len(networks) * NETWORK_TIME * args.scale
    lower_bound = work / (survivors * CONCURRENCY)
    policy = DhcpPolicy()
    plan = plan_dhcp_evacuate(snapshot, source, policy)
    options = ExecutorOptions(
        concurrency=args.concurrency,
        per_target_inflight=args.per_target,
        port_poll_interval=args.poll * args.scale,
        port_timeout=600,
    )
    executor = DhcpExecutor(dhcp, Journal(tmp / "state"), SystemClock(), options)
    print(f"evacuating {len(plan.moves)} networks with l3ha ...", flush=True)
    started = time.monotonic()
    result = executor.run(
        plan,
        snapshot.agents_by_id,
        fallbacks=fallback_targets(snapshot, policy),
        require_dead_source=True,
    )
    l3ha_wall = time.monotonic() - started
    moved = result.counts()[DhcpOutcome.MOVED.value]
    if moved != len(networks):
        print(f"WARNING: only {moved} of {len(networks)} moved: {result.counts()}")
    per_target = sorted(
        sum(1 for r in result.results if r.target == a.id) for a in snapshot.agents if a.alive
    )

    after = dhcp.read_dhcp_snapshot()
    alive = sorted(a.id for a in after.agents if a.alive)
    sample = networks[: args.serial_sample]
    print(f"serial baseline on {len(sample)} networks ...", flush=True)
    serial = []
    for i, network_id in enumerate(sample):
        (current,) = after.agents_of_network(network_id)
        target = next(a for a in alive[i % len(alive) :] + alive if a != current)
        host = after.agents_by_id[target].host
        serial.append(serial_move(dhcp, network_id, current, target, host))
    serial_total = statistics.mean(serial) * len(networks)

    rows = [
        ("networks evacuated", f"{moved} / {len(networks)}"),
        ("networks per survivor (min..max)", f"{per_target[0]}..{per_target[-1]}"),
        ("survivors x DHCP agent concurrency", f"{survivors} x {CONCURRENCY}"),
        ("time scale factor", f"{args.scale:g}"),
        ("set-up time per network (s)", f"{NETWORK_TIME * args.scale:.3f}"),
        ("lower bound: work / capacity (s)", f"{lower_bound:.2f}"),
        ("l3ha wall time, all ports ACTIVE (s)", f"{l3ha_wall:.2f}"),
        ("l3ha / lower bound", f"{l3ha_wall / lower_bound:.2f}x"),
        ("serial: mean per network (s)", f"{statistics.mean(serial):.3f}"),
        (f"serial: extrapolated x{len(networks)} (s)", f"{serial_total:.1f}"),
        ("serial / l3ha", f"{serial_total / l3ha_wall:.1f}x"),
    ]
    width = max(len(k) for k, _ in rows)
    print()
    for key, value in rows:
        print(f"{key:<{width}}  {value}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--networks", type=int, default=1000)
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="multiply every emulated set-up time by this (default 1: the emulator's default)",
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
