"""The keepalived lab: up, status, fail, recover, down. I/O: namespaces, processes, the state dir.

``up`` builds the namespaces (``topology``), starts one keepalived per node as
``keepalived -n -l -D -f CONF -p PID -r VRRP_PID`` inside it and one
``l3ha ha monitor`` per node and router, records what it started in
``STATE_DIR/lab.json`` and waits until every router has exactly one VIP
holder. ``down`` stops the recorded processes and then every process inside
the lab's namespaces and deletes the namespaces, so it also cleans up after a
crash that lost the state dir. A dead node is modelled by cutting its link
(its veth leaves the bridge); killing keepalived would leave the VIP behind.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from l3ha.errors import BadInputError, L3haError, NotFoundError, UserError
from l3ha.hastate.netlink import addresses_on
from l3ha.hastate.statefile import read_transition
from l3ha.lab import netns
from l3ha.lab.stack.processes import spawn_logged
from l3ha.lab.topology import (
    BRIDGE,
    BRIDGE_NS_ROLE,
    CLIENT,
    CLIENT_ADDRESS,
    DEVICE,
    NODE_NETWORK_PREFIX,
    LabSpec,
    keepalived_config,
    owned_by,
)

STATE_FILE = "lab.json"
SETTLE_POLL = 0.05
#: What the lab runs: program, as an error names it, the package that installs it.
REQUIRED_PROGRAMS = (
    ("keepalived", "keepalived", "keepalived"),
    ("ip", "ip (iproute2)", "iproute2"),
    ("sysctl", "sysctl", "procps"),
)


class LabNotSettledError(L3haError):
    """The lab started but did not elect one VIP holder per router in time."""


def default_state_dir(name: str) -> Path:
    """``$XDG_RUNTIME_DIR/l3ha/lab/NAME``, else ``/run/l3ha/lab/NAME`` (the lab needs root)."""
    base = os.environ.get("XDG_RUNTIME_DIR") or "/run"
    return Path(base) / "l3ha" / "lab" / name


def require_root_and_keepalived() -> None:
    """UserError when not root or a program the lab runs (keepalived, ...) is missing."""
    if os.geteuid() != 0:
        raise UserError("the lab needs root (network namespaces); run it as root")
    for program, shown, package in REQUIRED_PROGRAMS:
        if shutil.which(program) is None:
            raise UserError(f"{shown} not found on PATH; install the {package} package")


@dataclass
class LabRecord:
    """What ``lab.json`` holds: the spec and every process the lab started."""

    name: str
    nodes: int
    routers: int
    advert_int: float
    hook: str | None = None
    heal_garp: bool = True
    keepalived: dict[str, int] = field(default_factory=dict)
    monitors: dict[str, int] = field(default_factory=dict)
    cut: list[str] = field(default_factory=list)

    @property
    def spec(self) -> LabSpec:
        return LabSpec(self.name, self.nodes, self.routers, self.advert_int, self.heal_garp)


class Lab:
    """One lab and its state dir."""

    def __init__(self, record: LabRecord, state_dir: Path) -> None:
        self.record = record
        self.spec = record.spec
        self.dir = state_dir

    # --- paths -----------------------------------------------------------

    def conf(self, node: str) -> Path:
        return self.dir / f"keepalived-{node}.conf"

    def pid_files(self, node: str) -> tuple[Path, Path]:
        return self.dir / f"keepalived-{node}.pid", self.dir / f"keepalived-{node}-vrrp.pid"

    def monitor_state(self, router: str, node: str) -> Path:
        return self.dir / "monitors" / f"{router}-{node}.json"

    def monitor_socket(self, router: str, node: str) -> Path:
        return self.dir / "monitors" / f"{router}-{node}.sock"

    def log(self, what: str) -> Path:
        return self.dir / "logs" / f"{what}.log"

    # --- persistence -------------------------------------------------------

    def save(self) -> None:
        tmp = self.dir / f".{STATE_FILE}.tmp"
        tmp.write_text(json.dumps(asdict(self.record), indent=2) + "\n")
        os.replace(tmp, self.dir / STATE_FILE)

    @classmethod
    def load(cls, name: str, state_dir: Path) -> Lab:
        """The lab recorded in ``state_dir``; UserError when it is not up."""
        path = state_dir / STATE_FILE
        try:
            data = json.loads(path.read_text())
            record = LabRecord(**data)
        except FileNotFoundError as exc:
            raise UserError(f"lab {name!r} is not up (no {path})") from exc
        except (ValueError, TypeError) as exc:
            raise BadInputError(f"lab state {path} is malformed: {exc}") from exc
        if record.name != name:
            raise BadInputError(f"lab state {path} belongs to lab {record.name!r}, not {name!r}")
        return cls(record, state_dir)

    # --- up ----------------------------------------------------------------

    def build(self, settle_timeout: float) -> None:
        """Create everything; on any failure remove what was made and re-raise."""
        try:
            self._make_network()
            for node in self.spec.node_names:
                self._start_keepalived(node)
            for router in self.spec.router_names:
                for node in self.spec.node_names:
                    self._start_monitor(router, node)
            self.save()
            self.wait_settled(settle_timeout)
        except BaseException:
            teardown(self.spec.name, self.dir)
            raise

    def _make_network(self) -> None:
        spec = self.spec
        for ns in spec.namespaces():
            netns.add_namespace(ns)
        bridge_ns = spec.namespace(BRIDGE_NS_ROLE)
        netns.add_bridge(bridge_ns, BRIDGE)
        for node in spec.node_names:
            cidr = f"{spec.node_address(node)}/{NODE_NETWORK_PREFIX}"
            netns.add_port(
                bridge_ns, BRIDGE, node, peer_ns=spec.namespace(node), peer=DEVICE, cidr=cidr
            )
        client_cidr = f"{CLIENT_ADDRESS}/{NODE_NETWORK_PREFIX}"
        netns.add_port(
            bridge_ns, BRIDGE, CLIENT, peer_ns=spec.namespace(CLIENT), peer=DEVICE, cidr=client_cidr
        )

    def _start_keepalived(self, node: str) -> None:
        self.conf(node).write_text(keepalived_config(self.spec, node))
        pid_file, vrrp_pid_file = self.pid_files(node)
        for stale in (pid_file, vrrp_pid_file):
            stale.unlink(missing_ok=True)
        argv = ["ip", "netns", "exec", self.spec.namespace(node), "keepalived", "-n", "-l", "-D"]
        argv += ["-f", str(self.conf(node)), "-p", str(pid_file), "-r", str(vrrp_pid_file)]
        self.record.keepalived[node] = spawn_logged(argv, self.log(f"keepalived-{node}"))
        self.save()

    def _start_monitor(self, router: str, node: str) -> None:
        argv = [sys.executable, "-m", "l3ha.cli.main", "ha", "monitor"]
        argv += ["--netns", self.spec.namespace(node), "--device", DEVICE]
        argv += ["--vip", self.spec.vip(router)]
        argv += ["--state-file", str(self.monitor_state(router, node))]
        argv += ["--socket", str(self.monitor_socket(router, node))]
        if self.record.hook:
            argv += ["--exec", self.record.hook]
        self.monitor_state(router, node).parent.mkdir(parents=True, exist_ok=True)
        log = self.log(f"monitor-{router}-{node}")
        self.record.monitors[f"{router}/{node}"] = spawn_logged(argv, log)
        self.save()

    def wait_settled(self, timeout: float) -> None:
        """Until every monitor reported and every router has exactly one holder."""
        deadline = time.monotonic() + timeout
        while True:
            problem = self.unsettled_reason()
            if problem is None:
                return
            if time.monotonic() > deadline:
                raise LabNotSettledError(f"lab {self.spec.name!r} not settled: {problem}")
            time.sleep(SETTLE_POLL)

    def unsettled_reason(self) -> str | None:
        for key, pid in self.record.monitors.items():
            router, node = key.split("/")
            if not netns.alive(pid):
                return f"monitor {key} exited (see {self.log(f'monitor-{router}-{node}')})"
            if not self.monitor_state(router, node).exists():
                return f"monitor {key} has not reported yet"
        for node, pid in self.record.keepalived.items():
            if not netns.alive(pid):
                return f"keepalived on {node} exited (see {self.log(f'keepalived-{node}')})"
        for router in self.spec.router_names:
            holders = self.holders(router)
            if len(holders) != 1:
                return f"{router} has {len(holders)} VIP holders"
            for node in self.spec.node_names:
                expected = "master" if node in holders else "backup"
                if self.reported(router, node)["state"] != expected:
                    return f"monitor {router}/{node} does not report {expected} yet"
        return None

    # --- observe -------------------------------------------------------------

    def holders(self, router: str, nodes: list[str] | None = None) -> list[str]:
        """The nodes whose namespace has ``router``'s VIP right now."""
        vip = self.spec.vip(router).split("/")[0]
        chosen = nodes if nodes is not None else self.spec.node_names
        return [n for n in chosen if vip in addresses_on(self.spec.namespace(n), DEVICE)]

    def reported(self, router: str, node: str) -> dict[str, Any]:
        """What ``node``'s monitor for ``router`` last reported (state, seq) and whether it runs."""
        pid = self.record.monitors.get(f"{router}/{node}")
        found = read_transition(self.monitor_state(router, node))
        return {
            "state": found.state.value if found else None,
            "seq": found.seq if found else None,
            "running": pid is not None and netns.alive(pid),
        }

    def status_rows(self) -> list[dict[str, Any]]:
        rows = []
        for router in self.spec.router_names:
            holders = self.holders(router)
            monitors = {n: self.reported(router, n) for n in self.spec.node_names}
            row: dict[str, Any] = {
                "router": router,
                "vip": self.spec.vip(router),
                "holder": ",".join(holders),
                "holders": holders,
                "cut": list(self.record.cut),
                "monitors": monitors,
            }
            for node, rep in monitors.items():
                row[node] = (rep["state"] or "-") + ("" if rep["running"] else " (stopped)")
            rows.append(row)
        return rows

    # --- fail / recover --------------------------------------------------------

    def fail(self, node: str) -> None:
        """Cut ``node``'s link: its veth leaves the bridge (it keeps carrier, reaches nobody)."""
        self.spec.check_node(node)
        if node in self.record.cut:
            raise UserError(f"node {node} is already failed")
        netns.cut_port(self.spec.namespace(BRIDGE_NS_ROLE), node)
        self.record.cut.append(node)
        self.save()

    def recover(self, node: str) -> None:
        """Put ``node``'s link back on the bridge."""
        self.spec.check_node(node)
        if node not in self.record.cut:
            raise UserError(f"node {node} is not failed")
        netns.restore_port(self.spec.namespace(BRIDGE_NS_ROLE), BRIDGE, node)
        self.record.cut.remove(node)
        self.save()


def lab_up(
    spec: LabSpec, state_dir: Path, hook: str | None = None, settle_timeout: float = 60.0
) -> Lab:
    """Build and start a lab; UserError when it (or leftovers of it) is already there."""
    require_root_and_keepalived()
    if (state_dir / STATE_FILE).exists():
        record = _read_record(state_dir)
        if record is not None and record.name != spec.name:
            raise UserError(f"state dir {state_dir} is used by lab {record.name!r}")
        raise UserError(f"lab {spec.name!r} is already up (state in {state_dir})")
    leftovers = [ns for ns in netns.list_namespaces() if owned_by(ns, spec.name)]
    if leftovers:
        raise UserError(
            f"lab {spec.name!r} has namespaces already ({', '.join(leftovers)}); "
            f"run 'l3ha lab down --name {spec.name}'"
        )
    state_dir.mkdir(parents=True, exist_ok=True)
    record = LabRecord(
        spec.name, spec.nodes, spec.routers, spec.advert_int, hook, heal_garp=spec.heal_garp
    )
    lab = Lab(record, state_dir)
    lab.save()
    lab.build(settle_timeout)
    return lab


@dataclass
class DownReport:
    """What ``down`` stopped and removed."""

    processes: list[int] = field(default_factory=list)
    killed_hard: list[int] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    foreign_state: str | None = None  # the lab whose state dir was left alone


def _read_record(state_dir: Path) -> LabRecord | None:
    """The record in ``state_dir``; None when there is none or it cannot be read."""
    try:
        return LabRecord(**json.loads((state_dir / STATE_FILE).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _recorded_pids(record: LabRecord | None, state_dir: Path, name: str) -> list[int]:
    """Lab ``name``'s recorded pids still running a lab command line (never a recycled pid)."""
    if record is None or record.name != name:
        return []
    pids = [*record.monitors.values(), *record.keepalived.values()]
    marker = str(state_dir)
    return [p for p in pids if netns.alive(p) and marker in netns.cmdline(p)]


def teardown(name: str, state_dir: Path) -> DownReport:
    """Stop every process of lab ``name`` and delete its namespaces; idempotent.

    Only lab ``name`` is touched: a state dir recording another lab keeps its
    state and that lab's processes keep running (an unreadable state file
    names no lab, so it is removed).
    """
    report = DownReport()
    record = _read_record(state_dir)
    recorded = _recorded_pids(record, state_dir, name)
    owned = [ns for ns in netns.list_namespaces() if owned_by(ns, name)]
    inside = [p for ns in owned for p in netns.pids_in(ns)]
    pids = list(dict.fromkeys([*recorded, *inside]))
    report.processes = pids
    report.killed_hard = netns.terminate(pids)
    for ns in owned:
        leftover = netns.pids_in(ns)
        if leftover:
            report.killed_hard += netns.terminate(leftover, grace=1.0)
        netns.delete_namespace(ns)
    report.namespaces = owned
    if record is not None and record.name != name:
        report.foreign_state = record.name
    else:
        (state_dir / STATE_FILE).unlink(missing_ok=True)
        shutil.rmtree(state_dir / "monitors", ignore_errors=True)
    return report


def lab_down(name: str, state_dir: Path) -> DownReport:
    require_root_and_keepalived()
    return teardown(name, state_dir)


def open_lab(name: str, state_dir: Path) -> Lab:
    """A running lab (root required); UserError when it is not up or is broken."""
    if os.geteuid() != 0:
        raise UserError("the lab needs root (network namespaces); run it as root")
    lab = Lab.load(name, state_dir)
    missing = [ns for ns in lab.spec.namespaces() if ns not in netns.list_namespaces()]
    if missing:
        raise NotFoundError(f"lab {name!r} is broken: namespaces missing: {', '.join(missing)}")
    return lab
