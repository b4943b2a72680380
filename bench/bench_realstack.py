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
- ``l3ha-dataplane``: the same watch with a shorter judgement made safe by the data
  plane (``--dataplane-options``, default ``--dead-after 10 --report-interval 5
  --dataplane-probe icmp``), run inside the client namespace ``l3rs-client`` (the
  only place the routers' gateway addresses answer), the counting proxy's port
  relayed into it (``l3ha.lab.stack.relay``); 169.254 addresses never enter the
  machine's own namespace;
- ``l3ha-confirms``: the same in the client namespace with ``--confirms-options``
  (default: those and ``--dataplane-confirms``: a late agent whose gateways are all
  dark is dead before ``--dead-after``);
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

    sudo -E .venv/bin/python bench/bench_realstack.py                    # 10-15 min
    sudo -E .venv/bin/python bench/bench_realstack.py --faults node-death --modes l3ha neutron
    sudo -E .venv/bin/python bench/bench_realstack.py --modes l3ha-dataplane \
        --dataplane-options "--dead-after 10 --report-interval 5 --dataplane-probe icmp"
    sudo -E .venv/bin/python bench/bench_realstack.py --calibrate     # the emulator's timings
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from counting_proxy import CountingProxy  # bench/ is on the path when run as a script
from l3ha.lab.stack.processes import wait_for
from l3ha.lab.stack.reach import Pingers, Reach
from l3ha.lab.stack.relay import relay_into
from l3ha.lab.stack.scenario import SerialFailover, Watch, heal
from l3ha.lab.stack.spec import CLIENT_NS, StackSpec, tenant_router_ip, vm_namespace
from l3ha.lab.stack.stack import Stack, stack_up
from l3ha.lab.stack.teardown import teardown
from l3ha.lab.stack.topology import (
    NeutronHttp,
    pings,
    ports_active_on,
    router_hosts,
    unanswered,
    wait_for_agents,
)

MODES = ("l3ha", "l3ha-dataplane", "l3ha-confirms", "neutron", "serial")
DEFAULT_MODES = ("l3ha", "neutron", "serial")
DATAPLANE_OPTIONS = "--dead-after 10 --report-interval 5 --dataplane-probe icmp"
CONFIRMS_OPTIONS = DATAPLANE_OPTIONS + " --dataplane-confirms"
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
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(DEFAULT_MODES))
    parser.add_argument(
        "--dataplane-options",
        default=DATAPLANE_OPTIONS,
        help="the l3ha-dataplane watch's options (after the stack's timing)",
    )
    parser.add_argument("--confirms-options", default=CONFIRMS_OPTIONS,
                        help="the l3ha-confirms watch's options")  # fmt: skip
    parser.add_argument("--broker-modes", nargs="+", choices=MODES,
                        help="modes of the broker-outage trials (default: --modes)")  # fmt: skip
    parser.add_argument("--faults", nargs="+", choices=FAULTS, default=list(FAULTS))
    parser.add_argument("--dir", type=Path, default=Path("/run/l3ha/bench-stack"))
    parser.add_argument("--logs", type=Path, help="keep each trial's l3ha watch log here")
    parser.add_argument("--calibrate", action="store_true",
                        help="measure the emulator's timings instead of the trials")  # fmt: skip
    return parser.parse_args(argv)


class Failover:
    """One failover under test, started before the fault and stopped after the trial."""

    def __init__(self, mode: str, stack: Stack, scratch: Path, options: str = "") -> None:
        self.mode, self.stack, self.scratch = mode, stack, scratch
        self.options = shlex.split(options)
        self.proxy = CountingProxy(stack.endpoint).start()
        self.watch: Watch | None = None
        self.serial: SerialFailover | None = None
        self.relay: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        if self.mode.startswith("l3ha"):
            clouds = self.scratch / "clouds.yaml"
            clouds.write_text(self.stack.clouds_yaml().replace(self.stack.endpoint, self.proxy.url))
            if self.mode == "l3ha":
                self.watch = Watch(self.stack, self.scratch, clouds)
            else:
                port = int(self.proxy.url.rstrip("/").rsplit(":", 1)[1])
                self.relay = relay_into(CLIENT_NS, port)
                self.watch = Watch(self.stack, self.scratch, clouds, self.options,
                                   namespace=CLIENT_NS)  # fmt: skip
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
        if self.relay is not None:
            self.relay.kill()
            self.relay.wait(10)
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


def trial(
    stack: Stack, fault: str, mode: str, placement: dict[str, list[str]], args: argparse.Namespace
) -> Result:
    heal(stack, placement)
    routers = stack.state.data["routers"]
    logs: Path | None = args.logs
    with tempfile.TemporaryDirectory(prefix="l3rs-bench-") as tmp:
        scratch = Path(tmp)
        options = {"l3ha-dataplane": args.dataplane_options, "l3ha-confirms": args.confirms_options}
        failover = Failover(mode, stack, scratch, options.get(mode, ""))
        pingers = Pingers(stack.spec, scratch / "ping").start()
        failover.start()
        began = time.time()
        try:
            inject(stack, fault)
        finally:
            reach = pingers.stop()
            calls = failover.stop()
            if logs is not None and failover.watch is not None:
                logs.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(failover.watch.log, logs / f"{fault}-{mode}-watch.log")
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
        for name, base in by_mode.items():
            if not name.startswith("l3ha") or not base.all_back_s:
                continue
            for other in ("neutron", "serial"):
                if other in by_mode and by_mode[other].all_back_s:
                    ratio = (by_mode[other].all_back_s or 0.0) / base.all_back_s
                    print(f"{fault}: {other} takes {ratio:.2f}x {name}'s time until every "
                          "router answers")  # fmt: skip


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    spec = StackSpec(nodes=args.nodes, routers=args.routers)
    stack = stack_up(spec, args.dir)
    results = []
    try:
        placement = router_hosts(stack.api, stack.state.data["routers"])
        if args.calibrate:
            calibrate(stack, placement)
            return 0
        for fault in args.faults:
            broker = fault == "broker-outage" and args.broker_modes
            for mode in args.broker_modes if broker else args.modes:
                result = trial(stack, fault, mode, placement, args)
                print(result, flush=True)
                results.append(result)
    finally:
        teardown(args.dir)
    print_table(results)
    return 0


# --- calibration: the timings the emulator assumes, measured on the real stack ----------


def timed_until(check: Callable[[], bool], timeout: float, interval: float = 0.1) -> float:
    """Seconds until ``check`` holds (polled every ``interval``); inf after ``timeout``."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if check():
            return time.monotonic() - began
        time.sleep(interval)
    return float("inf")


def move_and_time(stack: Stack, names: list[str], target_host: str) -> list[tuple[float, float]]:
    """Move ``names`` (DELETE + POST each, all at once) to ``target_host``; per router the
    seconds from its POST until its VM answers and until its ports are ACTIVE there."""
    routers = stack.state.data["routers"]
    agents = {str(a["host"]): str(a["id"]) for a in stack.api.agents("L3 agent")}
    hosts = router_hosts(stack.api, routers)
    posted = {}
    for name in names:
        for host in hosts[name]:
            stack.api.call("DELETE", f"agents/{agents[host]}/l3-routers/{routers[name]}")
        stack.api.post(f"agents/{agents[target_host]}/l3-routers", {"router_id": routers[name]})
        posted[name] = time.monotonic()
    index = {name: int(name[1:]) for name in names}
    answered: dict[str, float] = {}
    active: dict[str, float] = {}
    deadline = time.monotonic() + 120
    while (len(answered) < len(names) or len(active) < len(names)) and time.monotonic() < deadline:
        for name in names:
            if name not in answered and pings(vm_namespace(index[name]),
                                              tenant_router_ip(index[name])):  # fmt: skip
                answered[name] = time.monotonic() - posted[name]
            if name not in active and ports_active_on(stack.api, routers[name], target_host):
                active[name] = time.monotonic() - posted[name]
        time.sleep(0.1)
    return [(answered.get(n, float("inf")), active.get(n, float("inf"))) for n in names]


def alive_hosts(stack: Stack) -> set[str]:
    return {str(a["host"]) for a in stack.api.agents("L3 agent") if a["alive"]}


def calibrate_moves(stack: Stack, placement: dict[str, list[str]]) -> None:
    hosts = stack.spec.hosts
    names = sorted(placement, key=lambda n: int(n[1:]))
    for attempt in range(3):
        heal(stack, placement)
        name = next(n for n in names if placement[n][0] == hosts[0])
        ((answer, active),) = move_and_time(stack, [name], hosts[1])
        print(f"one move #{attempt + 1}: answers {answer:.1f} s, "
              f"ports ACTIVE {active:.1f} s after POST")  # fmt: skip
    heal(stack, placement)
    batch = [n for n in names if placement[n][0] != hosts[-1]][:4]
    for name, (answer, active) in zip(batch, move_and_time(stack, batch, hosts[-1]), strict=True):
        print(f"batch of {len(batch)} onto one agent, {name}: answers {answer:.1f} s, "
              f"ports ACTIVE {active:.1f} s after its POST")  # fmt: skip


def calibrate_heartbeats(stack: Stack, placement: dict[str, list[str]]) -> None:
    victim = stack.spec.hosts[0]
    heal(stack, placement)
    stack.kill_node(victim)
    dead = timed_until(lambda: victim not in alive_hosts(stack), 120)
    print(f"node killed: its L3 agent alive=false {dead:.1f} s later")
    heal(stack, placement)
    _stopped, listening = stack.broker_outage(20)
    seen: dict[str, float] = {}
    while len(seen) < len(stack.spec.hosts) and time.monotonic() - listening < 120:
        for host in alive_hosts(stack) - set(seen):
            seen[host] = time.monotonic() - listening
        time.sleep(0.5)
    for host, back in sorted(seen.items(), key=lambda item: item[1]):
        print(f"broker outage 20 s: {host}'s L3 agent alive again {back:.1f} s after "
              "the broker listened")  # fmt: skip


def calibrate(stack: Stack, placement: dict[str, list[str]]) -> None:
    """Print the measured timings (see docs/fidelity.md)."""
    calibrate_moves(stack, placement)
    calibrate_heartbeats(stack, placement)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
