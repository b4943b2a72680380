"""What the OVN real-stack tests share: the skip reason, the faults and l3ha runs on the
stack, waits on its chassis, samplers of each router's primary, and the reads of the
journal and the rolling record the assertions are made on. I/O: the stack's processes,
its API, the l3ha CLI."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from l3ha.cli.main import main
from l3ha.health import HealthPolicy
from l3ha.journal import Journal
from l3ha.lab.netns import list_namespaces
from l3ha.lab.stack.ovnspec import AGENT_TYPE, owns_ovn_namespace
from l3ha.lab.stack.ovnstack import OvnStack, missing_programs
from l3ha.lab.stack.ovntopology import raise_chassis
from l3ha.lab.stack.processes import StackError, pids_naming
from l3ha.lab.stack.services import check_pymysql, neutron_python
from l3ha.lab.stack.spec import CLOUD_NAME

FAILOVER_LIMIT_S = 15.0  # BFD detects in ~3 s; generous for a loaded machine
CRASH_FAILOVER_S = 3.5  # the measured crash failover a graceful move must stay below
NO_OUTAGE_S = 0.5  # a few lost echoes at 0.1 s at most
WATCH_S = 12.0
DEAD_TIMEOUT_S = 90.0  # agent_down_time 15 plus Neutron's pings, on a loaded machine


def missing_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces, Open vSwitch)"
    missing = missing_programs()
    if missing:
        return f"needs {', '.join(missing)} (scripts/install-system-deps.sh)"
    try:
        check_pymysql(neutron_python())
    except StackError as exc:
        return f"needs the Neutron virtualenv with PyMySQL: {exc}"
    return None


REASON = missing_reason()
needs_stack = pytest.mark.skipif(REASON is not None, reason=REASON or "")


def leftovers(directory: Path) -> list[str]:
    found = [n for n in list_namespaces() if owns_ovn_namespace(n)]
    found += [f"pid {p}" for p in pids_naming(str(directory) + "/")]
    return found + ([str(directory)] if directory.exists() else [])


def fault(stack: OvnStack, *args: str) -> None:
    """A fault through the CLI, as an operator rehearses."""
    assert main(["lab", "stack", "fault", *args, "--dir", str(stack.layout.root)]) == 0


def l3ha(stack: OvnStack, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    """Run l3ha on the stack's cloud (its clouds.yaml) with JSON output; its exit code, parsed
    output (None if none) and stderr. What the test printed before is passed through."""
    earlier = capsys.readouterr().out
    with capsys.disabled():
        sys.stdout.write(earlier)
    with pytest.MonkeyPatch.context() as patch:  # the suite's autouse fixture hides any cloud
        patch.setenv("OS_CLIENT_CONFIG_FILE", str(stack.layout.root / "clouds.yaml"))
        patch.setenv("OS_CLOUD", CLOUD_NAME)
        code = main([*argv, "-f", "json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def l3ha_in_client(stack: OvnStack, *argv: str) -> tuple[int, Any, str]:
    """``l3ha`` run in the client namespace (``api_in_client``): exit code, JSON, stderr."""
    done = stack.l3ha_in_client(*argv, "-f", "json")
    return done.returncode, (json.loads(done.stdout) if done.stdout.strip() else None), done.stderr


def wait_primary(stack: OvnStack, router: dict[str, str], host: str, timeout: float) -> float:
    """Seconds until ``host`` is the router's primary again, or -1 if it is not by ``timeout``."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if stack.primary(router) == host:
            return time.monotonic() - began
        time.sleep(0.2)
    return -1.0


def wait_alive(stack: OvnStack, host: str, alive: bool, timeout: float) -> float:
    """Seconds until the API reads ``host`` alive (or dead); fails after ``timeout``."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        agents = {a["host"]: a["alive"] for a in stack.api.agents(AGENT_TYPE)}
        if agents.get(host) is alive:
            return time.monotonic() - began
        time.sleep(1.0)
    raise AssertionError(f"{host} not read alive={alive} within {timeout} s")


def wait_only_dead(stack: OvnStack, victim: str) -> float:
    """Seconds until the API reads ``victim`` dead and another chassis alive: right after a
    crash Neutron's agent cache was seen to read every chassis dead at once."""
    began = time.monotonic()
    while time.monotonic() - began < DEAD_TIMEOUT_S:
        agents = {a["host"]: a["alive"] for a in stack.api.agents(AGENT_TYPE)}
        if agents.get(victim) is False and any(agents.values()):
            return time.monotonic() - began
        time.sleep(1.0)
    raise AssertionError(f"{victim} not read dead alone within {DEAD_TIMEOUT_S} s")


def groups(stack: OvnStack) -> dict[str, list[tuple[str, int, bool]]]:
    """Each router's chassis from the API, highest priority first: (host, priority, alive)."""
    found = {}
    for router in stack.routers:
        agents = stack.api.get(f"routers/{router['id']}/l3-agents")["agents"]
        rows = [(a["host"], int(a["ha_chassis_priority"]), bool(a["alive"])) for a in agents]
        found[router["name"]] = sorted(rows, key=lambda row: -row[1])
    return found


def problem_kinds(doc: dict[str, Any]) -> list[str]:
    """The kinds of problem ``l3ha check -f json`` reported."""
    return [p["kind"] for p in doc["problems"]]


def report(line: str) -> None:
    print(f"ovnstack: {line}")


def answering_all(stack: OvnStack) -> None:
    assert stack.answering() == [r["gateway_ip"] for r in stack.routers]


def skew_onto(stack: OvnStack, host: str) -> None:
    """Every router's primary onto ``host`` (one graceful move each), as if Neutron's
    scheduler had left them there; waits until the southbound binds them there."""
    agent = next(a["id"] for a in stack.api.agents(AGENT_TYPE) if a["host"] == host)
    for router in stack.routers:
        raise_chassis(stack.api, router["id"], agent)
    for router in stack.routers:
        assert wait_primary(stack, router, host, 15.0) >= 0, groups(stack)


def all_alive(stack: OvnStack) -> None:
    """Wait until the API reads every chassis alive."""
    for host in stack.spec.hosts:
        wait_alive(stack, host, True, DEAD_TIMEOUT_S)


def by_name(stack: OvnStack, silent: dict[str, float]) -> dict[str, float]:
    """Each router's longest silence by its name, rounded."""
    return {r["name"]: round(silent[r["gateway_ip"]], 1) for r in stack.routers}


def assert_moves_graceful(stack: OvnStack, moved: set[str], silent: dict[str, float]) -> None:
    """Each moved router dark for about one graceful move, below a crash failover. A router
    left on the chassis its neighbours left was seen to blip too (0.8 s; 8.8 s once on a
    loaded machine: OVN releasing ports on its chassis, l3ha wrote nothing to it): it is
    reported, and held only below a failover's limit."""
    for router in stack.routers:
        limit = CRASH_FAILOVER_S if router["id"] in moved else FAILOVER_LIMIT_S
        assert silent[router["gateway_ip"]] < limit, (router["name"], silent)


def primaries_per_host(stack: OvnStack) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {h: [] for h in stack.spec.hosts}
    for router in stack.routers:
        found.setdefault(stack.primary(router), []).append(router["name"])
    return found


# --- ``l3ha watch`` on the real stack (issue 19) ----------------------------------------
#: Neutron pings the chassis on agent listings at most every agent_down_time // 2 = 7 s, so a
#: live chassis' heartbeat moves about that often: dead after 18 s of none, seen twice.
STACK_WATCH = ("--interval", "1", "--dead-after", "18", "--report-interval", "8",
               "--dead-observations", "2", "--max-moves-per-cycle", "50")  # fmt: skip


@contextmanager
def watching(stack: OvnStack, state: Path, *extra: str) -> Iterator[Any]:
    """``l3ha watch`` on the stack (its clouds.yaml), ready; killed at the end."""
    from tests.watch.daemon_process import WatchProcess

    env = dict(os.environ, OS_CLIENT_CONFIG_FILE=str(stack.layout.root / "clouds.yaml"),
               OS_CLOUD=CLOUD_NAME)  # fmt: skip
    args = [*STACK_WATCH, "--state-dir", str(state), *extra]
    process = WatchProcess(state.parent, env, args, "watch")
    try:
        process.wait_event("ready", timeout=60)
        yield process
    finally:
        process.close()


def moves_of(watch: Any) -> list[dict[str, object]]:
    return [e for e in watch.events("move") if e["outcome"] not in ("skipped",)]


# --- ``l3ha rolling`` over one gateway node (issue 19) -----------------------------------
_RUN = "from l3ha.cli.main import run; run()"
#: The gateway agent's heartbeat moves about every 7 s (see STACK_WATCH).
ROLLING = ("--stable-for", "10", "--dead-after", "18", "--report-interval", "8",
           "--poll-interval", "1", "-f", "json")  # fmt: skip
ROLLING_S = 240.0  # the pings' bound; they stop 3 s after the run ends
GRACEFUL_S = 2.5  # one graceful move: ~1 s; a crash failover is 3.5 s


class PrimarySampler:
    """Each router's primary read from the southbound every 0.5 s in a thread, while in
    the ``with`` block: (wall time, router name, host)."""

    def __init__(self, stack: OvnStack) -> None:
        self.stack = stack
        self.samples: list[tuple[float, str, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        deadline = time.monotonic() + 2 * ROLLING_S
        while not self._stop.wait(0.5) and time.monotonic() < deadline:
            for router in self.stack.routers:
                self.samples.append((time.time(), router["name"], self.stack.primary(router)))

    def __enter__(self) -> PrimarySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def on(self, host: str, after: float, before: float) -> set[str]:
        """Routers seen with ``host`` as their primary between the two moments."""
        return {name for at, name, seen in self.samples if after < at < before and seen == host}


def rolling(stack: OvnStack, state: Path, host: str) -> tuple[int, dict[str, Any], str]:
    """``l3ha rolling --hosts HOST`` whose maintenance command restarts the chassis'
    ovn-controller and Open vSwitch (``l3ha lab stack fault restart-agents --with-ovs``)."""
    fault_argv = [sys.executable, "-c", _RUN, "lab", "stack", "fault", "restart-agents",
                  "--with-ovs", "--dir", str(stack.layout.root)]  # fmt: skip
    argv = [sys.executable, "-c", _RUN, "rolling", "--hosts", host, "--run",
            shlex.join(fault_argv) + " {host}", "--state-dir", str(state), *ROLLING]  # fmt: skip
    env = dict(os.environ, OS_CLIENT_CONFIG_FILE=str(stack.layout.root / "clouds.yaml"),
               OS_CLOUD=CLOUD_NAME)  # fmt: skip
    child = subprocess.run(argv, env=env, text=True, capture_output=True, timeout=ROLLING_S,
                           check=False)  # fmt: skip
    start = child.stdout.find("{\n")
    return child.returncode, (json.loads(child.stdout[start:]) if start >= 0 else {}), child.stderr


def step_times(state: Path) -> dict[str, tuple[float, float]]:
    """The last rolling run's steps: phase -> (started, finished) as wall times."""
    from l3ha.operations.rolling.record import RollingRecord

    def wall(text: str | None) -> float:
        return datetime.fromisoformat(text).timestamp() if text else float("inf")

    with RollingRecord(state) as record:
        latest = record.latest_run()
        steps = record.steps(latest.id) if latest else []
    return {s.key.phase.value: (wall(s.started), wall(s.finished)) for s in steps}


def moves_per_router(state: Path, kinds: tuple[str, ...] = ()) -> list[Counter[str]]:
    """Per journalled operation (of ``kinds``, or any): how often each router moved."""
    with Journal(state) as journal:
        ops = [op for op in journal.history() if not kinds or op.kind in kinds]
        return [Counter(m.object_id for m in journal.moves(op.id) if m.outcome == "moved")
                for op in ops]  # fmt: skip


def planned_rebalance(
    stack: OvnStack, capsys: pytest.CaptureFixture[str], state: Path
) -> dict[str, Any]:
    """``l3ha rebalance --dry-run`` with l3ha's default weights and the journal in ``state``."""
    code, doc, err = l3ha(stack, capsys, "rebalance", "--dry-run", "--state-dir", str(state))
    assert code == 0, err
    return dict(doc)


# --- ``l3ha watch --auto-rebalance`` through a southbound restart (issue 19) -------------
NEUTRON_REACTS_S = 20.0  # Neutron re-handles every chassis 5-15 s after the southbound returns
REBALANCE_TIMEOUT_S = 120.0  # the watch's grace (30 s + 0.5 s a router) and its moves
GRACE_LEFT_S = 45.0  # past the grace, counted from the gates' resumption
GRACE_BASE_S = HealthPolicy().restart_grace_base  # plus 0.5 s a router: a lower bound


def at(event: dict[str, Any]) -> float:
    """An event's time stamp, as a wall time."""
    return datetime.fromisoformat(str(event["ts"])).timestamp()


def moves_while_halted(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The watch's moves logged between a ``halt`` and the next ``resumed``."""
    halted, found = False, []
    for event in events:
        if event["event"] in ("halt", "resumed"):
            halted = event["event"] == "halt"
        elif event["event"] == "move" and halted and event["outcome"] != "skipped":
            found.append(event)
    return found


def demoted(stack: OvnStack) -> list[str]:
    """Chassis at priority 0 in every router's group (Neutron's reaction to a SB restart)."""
    rows = groups(stack).values()
    return [h for h in stack.spec.hosts if all((h, 0) in [(n, p) for n, p, _ in r] for r in rows)]


def spread(stack: OvnStack) -> int:
    counts = [len(names) for names in primaries_per_host(stack).values()]
    return max(counts) - min(counts)
