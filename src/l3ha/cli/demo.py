"""``l3ha demo``: the watch daemon's story on the embedded emulator. I/O: runs an emulator
on 127.0.0.1 and the daemon in this process, writes a temporary directory, prints to stdout.

The story (what ``make demo`` shows): an emulated cloud with busy and HA
routers; ``l3ha watch`` starts and observes it; the message bus restarts —
every agent misses heartbeats, then they reconnect one by one — and l3ha
halts and says why, moving nothing; then an agent really dies, and l3ha
judges it dead from its own observation and evacuates it, spreading the busy
routers; the end compares the distribution before and after and shows how
long each affected router was unreachable, from the emulator's data plane.
``--commands`` runs the tour of the one-shot commands instead.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from l3ha.cli.demo_tour import demo_cloud, run_tour, step, wait_for

#: The emulated agents heartbeat every second (stamped to the second, as Neutron does)
#: and the daemon judges them dead after 5 s of silence: the whole story takes about a minute.
DEAD_AFTER = 5.0


def register(sub: Any) -> None:
    """Add ``l3ha demo``."""
    p = sub.add_parser(
        "demo",
        help="watch the failover daemon survive a broker restart and a dead agent (emulated)",
        description=(
            "Start an emulated Neutron cloud on 127.0.0.1 and 'l3ha watch' beside it, restart "
            "the emulated message bus (every agent looks dead, then they come back one by one: "
            "l3ha halts and moves nothing), then kill one agent (l3ha evacuates it, busy "
            "routers spread apart), and show the distribution before and after and each "
            "affected router's outage. Changes nothing outside a temporary directory. "
            "--commands tours the one-shot commands instead."
        ),
    )
    p.add_argument("--agents", type=int, default=6, help="L3 agents (default: 6)")
    p.add_argument("--routers", type=int, default=300, help="routers (default: 300)")
    p.add_argument("--victim", default="net-2", help="the agent to kill (default: net-2)")
    p.add_argument("--commands", action="store_true", help="tour the one-shot commands instead")
    p.set_defaults(func=_run_demo)


def _say(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


class _Narrator(logging.Handler):
    """Prints the daemon's decisions as they happen, in words (moves are counted)."""

    def __init__(self, hosts: dict[str, str]) -> None:
        super().__init__()
        self.hosts = hosts
        self.moves = 0
        self.halts = 0

    def emit(self, record: logging.LogRecord) -> None:
        fields = dict(getattr(record, "l3ha_fields", {}) or {})
        name = record.getMessage()
        line = self._line(name, fields)
        if line:
            _say(f"  [watch] {line}")

    def _line(self, name: str, fields: dict[str, object]) -> str:
        if name == "verdict" and fields.get("was"):
            return f"{fields['agent']}: {fields['was']} -> {fields['verdict']}"
        if name == "halt":
            self.halts += 1
            return f"HALT ({fields['reason']}): {fields['message']}"
        if name == "resumed":
            return "gates clear: acting again"
        if name == "action":
            agent = self.hosts.get(str(fields.get("agent")), fields.get("agent") or "")
            return f"{fields['action']} {agent}: {fields['reason']}".replace("  ", " ")
        if name == "move":  # emit() runs under the handler's own lock
            self.moves += 1
            return f"{self.moves} move(s) done" if self.moves % 10 == 0 else ""
        return ""


def _print_distribution(
    before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]
) -> None:
    _say(f"  {'agent':8} {'routers before':>15} {'after':>6} {'busy before':>12} {'after':>6}")
    for host in sorted(before):
        (r0, b0), (r1, b1) = before[host], after.get(host, (0, 0))
        _say(f"  {host:8} {r0:15d} {r1:6d} {b0:12d} {b1:6d}")


def _hosting(cloud: Any, host: str) -> set[str]:
    snapshot = cloud.read_snapshot()
    agent = snapshot.find_agent(host)
    return {b.router_id for b in snapshot.bindings_of_agent(agent.id)}


def _watch_settings(state_dir: Path) -> Any:
    from l3ha.daemon.settings import load_settings

    settings = load_settings(None, [], default_files=())
    return replace(
        settings,
        state_dir=state_dir,
        interval=0.5,
        dead_after=DEAD_AFTER,
        report_interval=1.0,
        port_timeout=60.0,
        metrics_port=0,
        coordination=(state_dir / "coordination").as_uri(),
    )


def _run_demo(args: argparse.Namespace) -> int:
    from l3ha.errors import BadInputError

    if args.agents < 3 or args.routers < 1:
        raise BadInputError("the demo needs at least 3 agents and 1 router")
    if args.commands:
        return run_tour(args)
    return _story(args)


def _story(args: argparse.Namespace) -> int:  # noqa: PLR0915 - a story is read top to bottom

    from l3ha.clock import SystemClock
    from l3ha.daemon.watch import Parts, Watcher, routers_per_host
    from l3ha.errors import BadInputError
    from l3ha.journal import Journal
    from l3ha.weights import WeightPolicy

    timing = {"report_interval": 1.0, "agent_down_time": DEAD_AFTER, "router_base_time": 0.2}
    with demo_cloud(args, busy=max(2, args.routers // 25), **timing) as (emu, cloud, tmp):
        hosts = emu.agent_ids_by_host()
        if args.victim not in hosts:
            raise BadInputError(f"no agent {args.victim!r} in the demo cloud")
        weights = WeightPolicy()
        busy_ids = {r.id for r in cloud.list_routers() if weights.is_busy(r)}
        _say(
            f"emulated Neutron API at {emu.url}: {args.agents} L3 agents in 2 AZs, "
            f"{args.routers} routers ({len(busy_ids)} busy, {emu.cfg.ha_routers} HA)"
        )
        before = routers_per_host(cloud.read_snapshot(), weights)

        step("l3ha watch starts beside the Neutron servers and observes the cloud")
        narrator = _Narrator({v: k for k, v in hosts.items()})
        watch_log = logging.getLogger("l3ha.watch")
        watch_log.addHandler(narrator)
        watch_log.setLevel(logging.INFO)
        watch_log.propagate = False  # the narrator tells it; no raw log lines
        settings = _watch_settings(tmp / "state")
        with Journal(settings.state_dir) as journal:
            watcher = Watcher(Parts(settings, cloud, journal, SystemClock(), weights=weights))
            thread = threading.Thread(target=watcher.run, name="l3ha-watch", daemon=True)
            thread.start()
            wait_for(lambda: watcher.cycles >= 3, 10)
            _say(
                f"  judging agents from their heartbeats: dead after {DEAD_AFTER:g} s of no "
                "change on l3ha's own clock and 3 stale observations"
            )

            outage, spread = 3 * DEAD_AFTER, DEAD_AFTER
            step(
                f"The message bus restarts: {outage:g} s without heartbeats, then the agents "
                f"reconnect one by one over {spread:g} s"
            )
            emu.faults.broker_outage(outage, spread)
            time.sleep(outage + spread + DEAD_AFTER + 2)
            _say(
                f"  routers l3ha moved during the outage: {narrator.moves} "
                f"(halts reported: {narrator.halts}; the tool of the day moved 121)"
            )

            step(f"{args.victim} really dies: no heartbeats, its routers stop forwarding")
            victims = _hosting(cloud, args.victim)
            started = time.monotonic()
            emu.faults.kill_agent(args.victim)
            done = wait_for(lambda: not _hosting(cloud, args.victim), 60)
            wait_for(lambda: all(emu.dataplane()[r]["reachable"] for r in victims), 60)
            _say(
                f"  {len(victims)} router(s) off {args.victim} and forwarding again "
                f"{time.monotonic() - started:.1f} s after it died"
            )
            watcher.request_stop()
            thread.join(timeout=30)

        step("Before and after (busy routers weigh 10 and are spread apart)")
        _print_distribution(before, routers_per_host(cloud.read_snapshot(), weights))
        dataplane = emu.dataplane()
        outages = sorted(float(dataplane[r]["downtime_s"]) for r in victims)
        step("How long each affected router was unreachable (the emulator's data plane)")
        if outages:
            _say(
                f"  {len(outages)} router(s): shortest {outages[0]:.1f} s, median "
                f"{outages[len(outages) // 2]:.1f} s, longest {outages[-1]:.1f} s "
                f"(detection {DEAD_AFTER:g} s + 3 observations + the move)"
            )
        others = sum(float(d["downtime_s"]) for r, d in dataplane.items() if r not in victims)
        _say(f"  every other router: {others:.1f} router-seconds of outage in total")
        unhosted = cloud.read_snapshot().unhosted_routers()
        _say(f"  unhosted routers at the end: {len(unhosted)}")
        return 0 if done and not unhosted else 1
