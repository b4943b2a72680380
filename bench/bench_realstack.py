"""Benchmark: node death and broker outage on a real stack; l3ha vs Neutron vs a serial loop.

I/O: brings up a real stack (``l3ha lab stack``: root, the Debian packages,
``L3HA_NEUTRON_PYTHON``), runs ``l3ha watch`` and the counting proxy
(``bench/counting_proxy.py``) on 127.0.0.1, pings every router from its VM, and
tears the stack down at the end. Prints a table and the ratios.

Every trial starts from the same cloud: all nodes up, every router back on the
host it had after bring-up (routers spread over the nodes in turn), every VM
answering. The failover under test is one of:

- ``l3ha``: ``l3ha watch --report-interval R --dead-after D --interval 1``
  through the counting proxy;
- ``neutron``: Neutron's own ``allow_automatic_l3agent_failover`` (periodic
  workers started for the trial; API calls are internal, not counted);
- ``serial``: one router at a time (unbind, bind to the least loaded live agent,
  wait for its ports ACTIVE) as soon as Neutron says an agent is dead, through
  the proxy.

Faults: ``node-death`` (node l3rs-n1's link cut, its agents and Open vSwitch
killed -9) and ``broker-outage`` (RabbitMQ stopped 2 x agent_down_time + 5 s,
node l3rs-nN reconnecting 8 s after the others). Columns: seconds from the fault
until every router answers again, router-seconds of outage, longest outage,
routers moved, API calls.

    sudo -E .venv/bin/python bench/bench_realstack.py                    # ~15 min
    sudo -E .venv/bin/python bench/bench_realstack.py --faults node-death --modes l3ha neutron
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from counting_proxy import CountingProxy  # bench/ is on the path when run as a script
from l3ha.lab.stack.processes import wait_for
from l3ha.lab.stack.reach import Pingers, Reach
from l3ha.lab.stack.scenario import SerialFailover, Watch, heal
from l3ha.lab.stack.spec import StackSpec
from l3ha.lab.stack.stack import Stack, stack_up
from l3ha.lab.stack.teardown import teardown
from l3ha.lab.stack.topology import NeutronHttp, router_hosts, unanswered, wait_for_agents

MODES = ("l3ha", "neutron", "serial")
FAULTS = ("node-death", "broker-outage")
VICTIM = "l3rs-n1"


@dataclass(frozen=True)
class Result:
    fault: str
    mode: str
    all_back_s: float | None
    dark_router_s: float
    longest_s: float
    moved: int
    api_calls: int | None


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--routers", type=int, default=9)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--faults", nargs="+", choices=FAULTS, default=list(FAULTS))
    parser.add_argument("--dir", type=Path, default=Path("/run/l3ha/bench-stack"))
    return parser.parse_args(argv)


class Failover:
    """One failover under test, started before the fault and stopped after the trial."""

    def __init__(self, mode: str, stack: Stack, scratch: Path) -> None:
        self.mode, self.stack, self.scratch = mode, stack, scratch
        self.proxy = CountingProxy(stack.endpoint).start()
        self.watch: Watch | None = None
        self.serial: SerialFailover | None = None

    def start(self) -> None:
        if self.mode == "l3ha":
            clouds = self.scratch / "clouds.yaml"
            clouds.write_text(self.stack.clouds_yaml().replace(self.stack.endpoint, self.proxy.url))
            self.watch = Watch(self.stack, self.scratch, clouds)
        elif self.mode == "neutron":
            self.stack.start_neutron_failover()
        else:
            routers = self.stack.state.data["routers"]
            api = NeutronHttp(self.proxy.url.rstrip("/"))
            self.serial = SerialFailover(api, routers).start()
        time.sleep(3)

    def stop(self) -> int | None:
        """Stop it; the API calls it made (None for Neutron's, which are internal)."""
        if self.watch is not None:
            self.watch.stop()
        if self.serial is not None:
            self.serial.stop()
            times = ", ".join(f"{t:.1f}" for t in self.serial.move_seconds)
            print(f"serial moves, unbind until ports ACTIVE (s): {times or '-'}", flush=True)
        if self.mode == "neutron":
            self.stack.stop_neutron_failover()
        calls = sum(self.proxy.counts().values())
        self.proxy.stop()
        return None if self.mode == "neutron" else calls


def inject(stack: Stack, fault: str) -> None:
    """The fault, then wait until the cloud has settled: every VM answers, agents alive."""
    if fault == "node-death":
        stack.kill_node(VICTIM)
        wait_for("every VM to answer again", lambda: not unanswered(stack.spec), 240, 0.5)
        return
    late = stack.spec.hosts[-1]
    stack.broker_outage(2 * stack.spec.agent_down_time + 5, late_host=late, late_by=8.0)
    wait_for_agents(stack.api, stack.spec, 180)
    time.sleep(stack.spec.agent_down_time + 10)
    wait_for("every VM to answer again", lambda: not unanswered(stack.spec), 240, 0.5)


def trial(stack: Stack, fault: str, mode: str, placement: dict[str, list[str]]) -> Result:
    heal(stack, placement)
    routers = stack.state.data["routers"]
    with tempfile.TemporaryDirectory(prefix="l3rs-bench-") as tmp:
        scratch = Path(tmp)
        failover = Failover(mode, stack, scratch)
        pingers = Pingers(stack.spec, scratch / "ping").start()
        failover.start()
        began = time.time()
        try:
            inject(stack, fault)
        finally:
            reach = pingers.stop()
            calls = failover.stop()
    after = router_hosts(stack.api, routers)
    moved = sum(1 for name in routers if after[name] != placement[name])
    return summarise(fault, mode, reach, began, moved=moved, calls=calls)


def summarise(
    fault: str, mode: str, reach: dict[str, Reach], began: float, *, moved: int, calls: int | None
) -> Result:
    backs = [r.back_after(began) for r in reach.values()]
    known = [b for b in backs if b is not None]
    return Result(
        fault, mode, max(known) if known else 0.0,
        sum(r.dark_seconds for r in reach.values()),
        max((r.longest for r in reach.values()), default=0.0), moved, calls,
    )  # fmt: skip


def print_table(results: list[Result]) -> None:
    print("\n| fault | failover | all answer again (s) | router-s dark | longest (s) "
          "| routers moved | API calls |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for r in results:
        calls = "-" if r.api_calls is None else str(r.api_calls)
        back = "-" if r.all_back_s is None else f"{r.all_back_s:.1f}"
        print(f"| {r.fault} | {r.mode} | {back} | {r.dark_router_s:.1f} | "
              f"{r.longest_s:.1f} | {r.moved} | {calls} |")  # fmt: skip
    for fault in FAULTS:
        by_mode = {r.mode: r for r in results if r.fault == fault}
        base = by_mode.get("l3ha")
        if base is None or not base.all_back_s:
            continue
        for other in ("neutron", "serial"):
            if other in by_mode and by_mode[other].all_back_s:
                ratio = (by_mode[other].all_back_s or 0.0) / base.all_back_s
                print(f"{fault}: {other} takes {ratio:.2f}x l3ha's time until every router answers")


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    spec = StackSpec(nodes=args.nodes, routers=args.routers)
    stack = stack_up(spec, args.dir)
    results = []
    try:
        placement = router_hosts(stack.api, stack.state.data["routers"])
        for fault in args.faults:
            for mode in args.modes:
                result = trial(stack, fault, mode, placement)
                print(result, flush=True)
                results.append(result)
    finally:
        teardown(args.dir)
    print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
