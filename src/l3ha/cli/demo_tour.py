"""``l3ha demo --commands``: the one-shot commands, told end to end on the embedded
emulator. I/O: runs an emulator on 127.0.0.1, writes a temporary clouds.yaml and journal,
prints to stdout.

The story: a cloud of 6 L3 agents in 2 AZs with busy and HA routers; one agent
dies; l3ha sees it, plans an evacuation that spreads the busy routers, runs it
concurrently, and the health check turns from CRITICAL back to OK. Then the
agent returns and a rebalance refills it with every agent donating.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

CLOUD = "l3ha-emulator"


def step(title: str) -> None:
    """A numbered section heading of a demo."""
    sys.stdout.write(f"\n=== {title}\n")
    sys.stdout.flush()


def _l3ha(argv: Sequence[str]) -> int:
    from l3ha.cli.main import main

    sys.stdout.write(f"$ l3ha {' '.join(argv)}\n")
    sys.stdout.flush()
    code = main(list(argv))
    sys.stdout.write(f"(exit {code})\n")
    sys.stdout.flush()
    return code


def _agent_table(*columns: str) -> int:
    """``l3ha agent list`` showing only ``columns``."""
    return _l3ha(["agent", "list", *(arg for c in columns for arg in ("-c", c))])


def wait_for(condition: Callable[[], bool], timeout: float) -> bool:
    """Poll ``condition`` every 0.2 s for at most ``timeout`` seconds; whether it held."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


@contextlib.contextmanager
def demo_cloud(args: argparse.Namespace, **config: Any) -> Iterator[tuple[Any, Any, Path]]:
    """The demos' emulated cloud: ``args.agents`` agents in 2 AZs, ``args.routers`` routers
    (a tenth HA), the rest of its configuration in ``config``; its clouds.yaml entry in the
    environment. Yields the emulator, the cloud and a temporary directory."""
    from l3ha.cloud.adapter import connect
    from l3ha.emulator import Emulator, EmulatorConfig

    emulated = EmulatorConfig(
        agents=args.agents,
        routers=args.routers,
        ha_routers=max(1, args.routers // 10),
        azs=2,
        router_port_time=0.05,
        seed=1,
        **config,
    )
    with tempfile.TemporaryDirectory(prefix="l3ha-demo-") as tmp, Emulator(emulated) as emu:
        clouds = emu.write_clouds_yaml(Path(tmp) / "clouds.yaml", name=CLOUD)
        os.environ.update(OS_CLIENT_CONFIG_FILE=str(clouds), OS_CLOUD=CLOUD)
        yield emu, connect(CLOUD), Path(tmp)


def _healthy(cloud: Any) -> bool:
    from l3ha.checks import run_check
    from l3ha.hastate.audit import Severity

    return run_check(cloud.read_snapshot(with_ha_state=True), 100).severity == Severity.OK


def run_tour(args: argparse.Namespace) -> int:
    """The one-shot tour (``l3ha demo --commands``, whose options ``l3ha demo`` checked);
    the exit code of the evacuation."""
    from l3ha.errors import BadInputError

    timing = {"report_interval": 0.5, "agent_down_time": 3.0, "router_base_time": 0.3}
    with demo_cloud(args, busy=max(1, args.routers // 20), **timing) as (emu, cloud, tmp):
        os.environ["L3HA_STATE_DIR"] = f"{tmp}/state"
        sys.stdout.write(f"emulated Neutron API at {emu.url} (clouds.yaml entry {CLOUD!r})\n")
        if args.victim not in emu.agent_ids_by_host():
            raise BadInputError(f"no agent {args.victim!r} in the demo cloud")

        step("The cloud: agents with their load (busy routers weigh 10)")
        _agent_table("host", "az", "alive", "routers", "busy", "weight")
        _l3ha(["check"])

        step(f"{args.victim} dies (no heartbeats, its routers stop forwarding)")
        emu.faults.kill_agent(args.victim)
        wait_for(lambda: not cloud.get_agent(emu.agent_ids_by_host()[args.victim]).alive, 15)
        _agent_table("host", "alive", "heartbeat_age", "routers")
        _l3ha(["check"])

        step("Safety first: a live agent is never evacuated by mistake")
        _l3ha(["evacuate", "net-1"])

        step("The plan: canary first, busy routers early and spread apart (dry run)")
        _l3ha(["evacuate", args.victim, "--dry-run"])

        step("Evacuate: concurrent moves, each read back, ports waited for")
        started = time.monotonic()
        code = _l3ha(["evacuate", args.victim, "--port-timeout", "60"])
        sys.stdout.write(f"evacuation took {time.monotonic() - started:.1f} s\n")
        step("HA routers whose active replica died elect a new one by VRRP (seconds)")
        wait_for(lambda: _healthy(cloud), 20)
        _l3ha(["check", "--imbalance-threshold", "100"])

        step(f"{args.victim} comes back empty; rebalance refills it from every agent")
        emu.faults.revive_agent(args.victim)
        wait_for(lambda: cloud.get_agent(emu.agent_ids_by_host()[args.victim]).alive, 15)
        _l3ha(["rebalance", "--port-timeout", "60"])
        _agent_table("host", "alive", "routers", "busy", "weight")
        dataplane = emu.dataplane()
        down = sum(1 for d in dataplane.values() if not d["reachable"])
        step(f"Data plane: {down} of {len(dataplane)} routers unreachable now")
        sys.stdout.write("every move is in the journal: 'l3ha history' lists them\n")
        return code
