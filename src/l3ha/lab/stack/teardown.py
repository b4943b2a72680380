"""Remove everything a stack made, also after a crash. I/O: signals, ``ip netns``, files.

In order: the processes recorded in the state file (agents first, the broker
and database last), every process whose command line names a path inside the
stack's directory (detached privsep helpers, anything unrecorded), every
process inside one of the stack's namespaces (keepalived, dnsmasq, leftovers),
then those namespaces (``l3rs-*`` and the agents' ``*@l3rs-*``) and the
directory itself. Never signals a process it cannot attribute to the stack.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from l3ha.lab.netns import delete_namespace, list_namespaces, pids_in, terminate
from l3ha.lab.stack.processes import StateFile, pids_naming, stop_group
from l3ha.lab.stack.spec import owns_namespace

# Stopped first to last; roles not listed (per-node ones) go first of all.
SERVICE_ORDER = ("api", "periodic", "rpc", "rabbit", "epmd", "mariadb")


@dataclass
class TeardownReport:
    processes: list[int] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    removed_dir: bool = False


def _recorded_in_order(directory: Path) -> list[int]:
    state_file = directory / "stack.json"
    if not state_file.exists():
        return []
    pids = StateFile(state_file).pids
    nodes = [pid for role, pid in sorted(pids.items()) if role not in SERVICE_ORDER]
    return nodes + [pids[role] for role in SERVICE_ORDER if role in pids]


def _ancestors() -> set[int]:
    """Our own pid and every parent's: never ours to stop, whatever their command line says."""
    found, pid = set(), os.getpid()
    while pid > 1:
        found.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat.rsplit(")", 1)[-1].split()[1])
    return found


def teardown(directory: Path) -> TeardownReport:
    """Stop and remove everything of the stack in ``directory``; what was done."""
    report = TeardownReport()
    for pid in _recorded_in_order(directory):
        if stop_group(pid, grace=10):
            report.processes.append(pid)
    mine = _ancestors()
    stray = [p for p in pids_naming(str(directory.resolve()) + "/") if p not in mine]
    terminate(stray, grace=5)
    report.processes += stray
    namespaces = [n for n in list_namespaces() if owns_namespace(n)]
    for namespace in namespaces:
        inside = [p for p in pids_in(namespace) if p not in mine]
        terminate(inside, grace=5)
        report.processes += inside
    for namespace in namespaces:
        delete_namespace(namespace)
    report.namespaces = namespaces
    if directory.exists():
        shutil.rmtree(directory, ignore_errors=True)
        report.removed_dir = True
    return report
