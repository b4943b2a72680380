"""Benchmark: l3ha's care of ML2/OVN gateways on the real OVN stack, against doing nothing.

I/O: brings up a real OVN stack (``l3ha lab stack up --ovn``: root, the Debian packages,
``L3HA_NEUTRON_PYTHON``), runs l3ha in this process through the stack's clouds.yaml, pings
gateway addresses from the client namespace every 0.1 s, and tears the stack down at the
end. One run, in this order on one stack of R routers over 3 gateway chassis:

1. Neutron's scheduler: primaries per chassis after creation, and busy primaries (every
   ``--busy-every``-th router gets a floating IP: busy by ``--busy-fips 1``).
2. Without l3ha: the chassis l3ov-gw1 crashes (links cut, daemons killed); its primaries'
   outage (BFD failover); it returns: how many of its routers fail back, and their second
   outage in router-seconds.
3. With l3ha: the same crash, ``l3ha evacuate`` once the API reads it dead, the return:
   fail-backs and router-seconds again. Neutron leaves the returned chassis with no
   primaries: the spread "after a chassis is removed".
4. ``l3ha rebalance --busy-fips 1``: its moves (and lower bound), the moved routers'
   outage (graceful) and the spread after it.
5. Every primary skewed onto l3ov-gw2 by hand (one PUT each), then ``l3ha drain
   l3ov-gw2``: the time to drain a chassis with R primaries and the moved routers' outage.

Outage = the longest gap between two echo replies of a gateway (at most ``--ping`` of them
pinged at once). Not run in CI.

    sudo -E L3HA_NEUTRON_PYTHON=$PWD/.venv-neutron/bin/python .venv/bin/python bench/bench_ovn.py
    ... bench/bench_ovn.py --routers 30 --ping 30          # a quicker run
    ... bench/bench_ovn.py --routers 100 --ping 100 --drain-only --watch 150  # scenario 5 only
    ... bench/bench_ovn.py --routers 100 --ping 100 --drain-only --drain-concurrency 4,32
    ... bench/bench_ovn.py --routers 100 --ping 100 --drain-only --trace  # where it goes
    ... bench/bench_ovn.py --routers 100 --ping 100 --drain-only --drain-modes plain,probe

``--trace`` times each drained router's outage against its northbound write, its
southbound claim, the northbound hosting-chassis and Neutron's gateway port binding
(``ovn_trace.py``): medians in the table, every router in ``trace-*.json`` under ``--trace-dir``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from l3ha.cli.main import main
from l3ha.lab.stack.ovnspec import AGENT_TYPE, OVN_CLIENT_NS, OvnSpec
from l3ha.lab.stack.ovnstack import OvnStack, ovn_stack_up, ovn_teardown
from l3ha.lab.stack.ovntopology import (
    add_floating_ip,
    longest_gaps,
    longest_silences,
    raise_chassis,
)
from l3ha.lab.stack.relay import relay_into
from l3ha.lab.stack.spec import CLOUD_NAME
from ovn_trace import SIGNALS, GatewayTrace  # bench/ is on the path when run as a script

WATCH_S = 14.0
MOVES_WATCH_S = 45.0  # a rebalance or drain of 90 routers, and their pings after
DEAD_TIMEOUT_S = 120.0
ANSWER_PROBE_S = 3.0  # a gateway that answers no ping in this window is dark
AFTER_BURST_S = 600.0  # a 100-router skew left one chassis read dead for over 120 s


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--routers", type=int, default=100)
    parser.add_argument("--busy-every", type=int, default=5)
    parser.add_argument("--ping", type=int, default=30, help="gateways pinged at once at most")
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--trace", action="store_true", help="time each drained router's outage")
    parser.add_argument("--trace-dir", type=Path, default=None, help="where --trace writes")
    parser.add_argument(
        "--drain-only",
        action="store_true",
        help="only scenario 5 (skew every primary onto one chassis, drain it)",
    )
    parser.add_argument(
        "--drain-modes",
        default="plain",
        metavar="MODE[,MODE]",
        help="scenario 5 once per mode: plain (l3ha drain) and/or probe (l3ha drain --probe "
        "icmp, run in the client namespace, the API relayed into it); default plain",
    )
    parser.add_argument(
        "--drain-concurrency",
        default="32",
        metavar="N[,N...]",
        help="scenario 5 once per value, each with l3ha drain --concurrency N (default 32)",
    )
    parser.add_argument("--watch", type=float, default=MOVES_WATCH_S, metavar="S",
                        help=f"seconds the gateways are pinged around a rebalance or drain "
                        f"(default {MOVES_WATCH_S:.0f})")  # fmt: skip
    return parser.parse_args(argv)


class Bench:
    """The stack, l3ha run on it, and the figures gathered."""

    def __init__(self, stack: OvnStack, args: argparse.Namespace, state: Path) -> None:
        self.stack = stack
        self.args = args
        self.state = state
        self.rows: list[tuple[str, str]] = []
        self.busy: set[str] = set()
        self.relay: subprocess.Popen[bytes] | None = None

    # --- helpers -------------------------------------------------------------------------

    def l3ha(self, *argv: str) -> tuple[int, Any, float]:
        """l3ha on the stack's cloud, JSON output; exit code, document, seconds."""
        os.environ["OS_CLIENT_CONFIG_FILE"] = str(self.stack.layout.root / "clouds.yaml")
        os.environ["OS_CLOUD"] = CLOUD_NAME
        out = io.StringIO()
        began = time.monotonic()
        with contextlib.redirect_stdout(out):
            code = main([*argv, "-f", "json", "--state-dir", str(self.state)])
        took = time.monotonic() - began
        text = out.getvalue().strip()
        return code, (json.loads(text) if text else None), took

    def primaries(self) -> dict[str, str]:
        """Router name -> the chassis the southbound binds its gateway to."""
        return {r["name"]: self.stack.primary(r) for r in self.stack.routers}

    def spread(self) -> str:
        now = self.primaries()
        counts = {h: 0 for h in self.stack.spec.hosts}
        busy = {h: 0 for h in self.stack.spec.hosts}
        for name, host in now.items():
            counts[host] = counts.get(host, 0) + 1
            busy[host] = busy.get(host, 0) + (name in self.busy)
        shown = "/".join(str(counts[h]) for h in self.stack.spec.hosts)
        busy_shown = "/".join(str(busy[h]) for h in self.stack.spec.hosts)
        return (
            f"primaries {shown} (max {max(counts.values())}, min {min(counts.values())}); "
            f"busy {busy_shown}"
        )

    def silences(
        self, names: list[str], action: Callable[[], None], seconds: float = WATCH_S
    ) -> dict[str, float]:
        """Longest silence of (up to ``--ping`` of) the routers ``names`` while ``action`` runs."""
        chosen = [r for r in self.stack.routers if r["name"] in names][: self.args.ping]
        if not chosen:
            action()
            return {}
        silent = longest_silences([r["gateway_ip"] for r in chosen], seconds, action)
        return {r["name"]: silent[r["gateway_ip"]] for r in chosen}

    def answering(self, names: list[str], since: float) -> str:
        """Wait (at most ``AFTER_BURST_S``) until every pinged gateway answers; say when."""
        while True:
            silent = self.silences(names, lambda: None, ANSWER_PROBE_S)
            dark = [n for n, s in silent.items() if s >= ANSWER_PROBE_S - 1.0]
            waited = time.monotonic() - since
            if not dark:
                return f"every gateway answering {waited:.0f} s after the skew began"
            if waited > AFTER_BURST_S:
                return f"{len(dark)} gateways still dark {waited:.0f} s after the skew began"

    def wait_alive(self, host: str, alive: bool) -> float:
        began = time.monotonic()
        while time.monotonic() - began < DEAD_TIMEOUT_S:
            agents = {a["host"]: a["alive"] for a in self.stack.api.agents(AGENT_TYPE)}
            if agents.get(host) is alive:
                return time.monotonic() - began
            time.sleep(1.0)
        raise RuntimeError(f"{host} not read alive={alive} within {DEAD_TIMEOUT_S} s")

    def wait_only_dead(self, victim: str) -> tuple[float, float]:
        """Seconds until the API reads ``victim`` dead and another chassis alive, and how many
        of them it read every chassis dead (its agent cache lagging after a burst)."""
        began = time.monotonic()
        all_dead = 0.0
        while time.monotonic() - began < DEAD_TIMEOUT_S:
            agents = {a["host"]: a["alive"] for a in self.stack.api.agents(AGENT_TYPE)}
            if agents.get(victim) is False and any(agents.values()):
                return time.monotonic() - began, all_dead
            if not any(agents.values()):
                all_dead += 1.0
            time.sleep(1.0)
        raise RuntimeError(f"{victim} not read dead alone within {DEAD_TIMEOUT_S} s")

    def all_alive(self) -> None:
        """Wait until the API reads every chassis alive (its agent cache lags after bursts)."""
        for host in self.stack.spec.hosts:
            self.wait_alive(host, True)

    def alive_after(self, timeout: float) -> str:
        """Wait (up to ``timeout``) until the API reads every chassis alive; what it read."""
        began = time.monotonic()
        dead: list[str] = []
        while time.monotonic() - began < timeout:
            dead = sorted(a["host"] for a in self.stack.api.agents(AGENT_TYPE) if not a["alive"])
            if not dead:
                return f"the API read every chassis alive {time.monotonic() - began:.0f} s later"
            time.sleep(2.0)
        return f"the API still read {', '.join(dead)} dead {timeout:.0f} s later: drained anyway"

    def row(self, what: str, figure: str) -> None:
        self.rows.append((what, figure))
        print(f"bench_ovn: {what}: {figure}", flush=True)

    # --- scenarios -------------------------------------------------------------------------

    def scheduler(self) -> None:
        for index, router in enumerate(self.stack.routers):
            if index % self.args.busy_every == 0:
                add_floating_ip(self.stack.api, router)
                self.busy.add(router["name"])
        self.row("Neutron's scheduler, after creation", self.spread())

    def crash_and_return(self, evacuate: bool) -> None:
        victim = self.stack.spec.hosts[0]
        self.all_alive()
        on_victim = [n for n, h in self.primaries().items() if h == victim]
        label = "with l3ha evacuate" if evacuate else "without l3ha"
        silent = self.silences(on_victim, lambda: self.stack.kill_node(victim))
        if not evacuate:
            self.row(f"crash of {victim} ({len(on_victim)} primaries): outage per router",
                     _stats(silent))  # fmt: skip
        if evacuate:
            dead, all_dead = self.wait_only_dead(victim)
            code, doc, took = self.l3ha("evacuate", victim)
            self.row("l3ha evacuate", f"exit {code} in {took:.1f} s, the API read it dead "
                     f"(and the others alive) after {dead:.1f} s, every chassis dead for "
                     f"{all_dead:.0f} s of that; {_counts(doc)}")  # fmt: skip
        silent = self.silences(on_victim, lambda: self.stack.revive_node(victim))
        time.sleep(3.0)
        back = [n for n, h in self.primaries().items() if h == victim]
        seconds = sum(s for n, s in silent.items() if n in back)
        failed_back = f"{len(back)} of {len(on_victim)} routers fail back"
        self.row(f"{victim} returns, {label}",
                 f"{failed_back}, {seconds:.1f} router-s of second outage "
                 f"({len(silent)} pinged); {self.spread()}")  # fmt: skip

    def rebalance(self) -> None:
        before = self.primaries()
        result: list[tuple[int, Any, float]] = []
        names = [r["name"] for r in self.stack.routers]
        self.all_alive()
        silent = self.silences(
            names,
            lambda: result.append(self.l3ha("rebalance", "--busy-fips", "1")),
            self.args.watch,
        )
        ((code, doc, took),) = result
        moved = [n for n, h in self.primaries().items() if h != before[n]]
        self.row("l3ha rebalance --busy-fips 1",
                 f"exit {code} in {took:.1f} s, {_counts(doc)}, lower bound "
                 f"{doc.get('lower_bound') if doc else None}; {self.spread()}")  # fmt: skip
        self.row("rebalance: outage per moved router",
                 _stats({n: s for n, s in silent.items() if n in moved}))  # fmt: skip

    def l3ha_in_client(self, *argv: str) -> tuple[int, Any, float]:
        """``l3ha`` run in the client namespace, where the gateways answer (the API relayed
        into it): exit code, JSON document, seconds."""
        if self.relay is None:
            self.relay = relay_into(OVN_CLIENT_NS, self.stack.api_port)
        began = time.monotonic()
        done = self.stack.l3ha_in_client(*argv, "-f", "json", "--state-dir", str(self.state))
        took = time.monotonic() - began
        if done.stderr.strip():
            print(f"bench_ovn: l3ha stderr: {done.stderr.strip()[-2000:]}", flush=True)
        text = done.stdout.strip()
        return done.returncode, (json.loads(text) if text else None), took

    def drain(self, concurrency: int, probe: str | None = None) -> None:
        host = self.stack.spec.hosts[1]
        agent = next(a["id"] for a in self.stack.api.agents(AGENT_TYPE) if a["host"] == host)
        began = time.monotonic()
        for router in self.stack.routers:
            raise_chassis(self.stack.api, router["id"], agent)
        deadline = time.monotonic() + 60.0
        while time.monotonic() < deadline and set(self.primaries().values()) != {host}:
            time.sleep(1.0)
        skewed = sum(1 for h in self.primaries().values() if h == host)
        took = time.monotonic() - began
        alive = self.alive_after(AFTER_BURST_S)  # Neutron's agent cache lags after a burst
        names = [r["name"] for r in self.stack.routers]
        answering = self.answering(names, began)  # the skew's own outage is not the drain's
        self.row(f"skew by hand onto {host}",
                 f"{skewed} primaries in {took:.1f} s; {self.spread()}; {alive}; "
                 f"{answering}")  # fmt: skip
        result: list[tuple[int, Any, float]] = []
        drain_argv: tuple[str, ...] = ("drain", host, "--concurrency", str(concurrency))
        if probe is not None:
            drain_argv += ("--probe", probe)

        def run_drain() -> None:
            run = self.l3ha if probe is None else self.l3ha_in_client
            result.append(run(*drain_argv))

        if self.args.trace:
            label = "-".join(drain_argv[2:]).replace("--", "")
            silent = self.traced(names, run_drain, host, f"trace-{label}.json")
        else:
            silent = self.silences(names, run_drain, self.args.watch)
        ((code, doc, took),) = result
        shown = " ".join(drain_argv)
        self.row(f"l3ha {shown} ({skewed} primaries)",
                 f"exit {code} in {took:.1f} s, {_counts(doc)}; {self.spread()}")  # fmt: skip
        self.row("drain: outage per moved router", _stats(silent))

    def traced(
        self, names: list[str], action: Callable[[], None], source: str, file_name: str
    ) -> dict[str, float]:
        """``silences`` with a ``GatewayTrace``: the medians of where each moved router's
        outage went, as rows; every router in ``file_name``."""
        chosen = [r for r in self.stack.routers if r["name"] in names][: self.args.ping]
        began = time.time()
        with GatewayTrace(self.stack) as trace:
            gaps = longest_gaps([r["gateway_ip"] for r in chosen], self.args.watch, action)
        before = {n: source for n in names}
        after = self.primaries()
        rows = []
        for router in chosen:
            name, (dark, light) = router["name"], gaps[router["gateway_ip"]]
            if after.get(name) == before[name]:
                continue
            row = {"router": name, "to": after.get(name), "dark": dark - began,
                   "light": light - began}  # fmt: skip
            for signal in SIGNALS:
                when = trace.changed_to(name, signal, after.get(name, ""), began)
                row[signal] = None if when is None else when - began
            rows.append(row)
        where = self.args.trace_dir or Path(self.state)
        where.mkdir(parents=True, exist_ok=True)
        where.joinpath(file_name).write_text(json.dumps(rows, indent=1))
        for column in ("dark", *SIGNALS, "light"):
            values = sorted(r[column] for r in rows if r[column] is not None)
            if values:
                self.row(f"trace: {column} (s after the drain began)",
                         f"median {statistics.median(values):.1f}, min {values[0]:.1f}, max "
                         f"{values[-1]:.1f} ({len(values)} routers)")  # fmt: skip
        return {r["router"]: r["light"] - r["dark"] for r in rows}


def _stats(silent: dict[str, float]) -> str:
    if not silent:
        return "none pinged"
    values = sorted(silent.values())
    return (
        f"median {statistics.median(values):.1f} s, min {values[0]:.1f} s, max "
        f"{values[-1]:.1f} s, {sum(values):.1f} router-s ({len(values)} routers pinged)"
    )


def _counts(doc: Any) -> str:
    counts = doc.get("counts", {}) if isinstance(doc, dict) else {}
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items()) if n) or "no moves"


def run(args: argparse.Namespace) -> int:
    directory = args.dir or Path(tempfile.mkdtemp(prefix="l3ov-bench-")) / "stack"
    began = time.monotonic()
    stack = ovn_stack_up(OvnSpec(chassis=3, routers=args.routers), directory)
    print(f"bench_ovn: stack up with {args.routers} routers in {time.monotonic() - began:.0f} s")
    state = Path(tempfile.mkdtemp(prefix="l3ha-bench-ovn-"))
    bench = Bench(stack, args, state)
    try:
        if not args.drain_only:
            bench.scheduler()
            bench.crash_and_return(evacuate=False)
            bench.crash_and_return(evacuate=True)
            bench.rebalance()
        for concurrency in args.drain_concurrency.split(","):
            for mode in args.drain_modes.split(","):
                bench.drain(int(concurrency), probe="icmp" if mode == "probe" else None)
    finally:
        if bench.relay is not None:
            bench.relay.kill()
            bench.relay.wait(10)
        ovn_teardown(directory)
        shutil.rmtree(state, ignore_errors=True)
        if args.dir is None:
            with contextlib.suppress(OSError):  # the temporary parent made above, if empty
                directory.parent.rmdir()
    print("\n| what | measured |\n|---|---|")
    for what, figure in bench.rows:
        print(f"| {what} | {figure} |")
    return 0


if __name__ == "__main__":
    sys.exit(run(parse_args(sys.argv[1:])))
