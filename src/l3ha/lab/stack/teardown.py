"""Remove everything a stack made, also after a crash. I/O: signals, ``ip netns``, files.

In order: the processes recorded in the state file (agents first, the broker
and database last), every process whose command line names a path inside the
stack's directory (detached privsep helpers, anything unrecorded), every
process inside one of the stack's namespaces (keepalived, dnsmasq, leftovers),
then those namespaces (``l3rs-*`` and the agents' ``*@l3rs-*``) and the
directory itself. Never signals a process it cannot attribute to the stack.

The node processes and Neutron's servers get one second between SIGTERM and SIGKILL:
nothing of them outlives the stack, and the OVS agent and the servers hang on SIGTERM
closing their AMQP channels (they took the whole grace, 10 s a stage, on every teardown).
The broker and the database stop within a second or two and are given their time.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from l3ha.lab.netns import delete_namespace, list_namespaces, pids_in, terminate
from l3ha.lab.stack.processes import StateFile, pids_naming, stop_groups
from l3ha.lab.stack.spec import owns_namespace

# Stopped stage by stage after the node processes (roles HOST/ROLE, fab/ROLE).
SERVICE_STAGES = (("api", "periodic", "rpc"), ("rabbit",), ("epmd", "mariadb"))
#: Seconds from SIGTERM to SIGKILL: the node stage, then each of SERVICE_STAGES.
STAGE_GRACE = (1.0, 1.0, 10.0, 10.0)


@dataclass
class TeardownReport:
    processes: list[int] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)


def _recorded_in_stages(directory: Path) -> list[list[int]]:
    """Recorded pids: every node process together, then the services stage by stage."""
    state_file = directory / "stack.json"
    if not state_file.exists():
        return []
    pids = StateFile(state_file).pids
    nodes = [pid for role, pid in pids.items() if "/" in role]
    services = [[pids[role] for role in stage if role in pids] for stage in SERVICE_STAGES]
    return [nodes, *services]


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


def teardown(directory: Path, owns: Callable[[str], bool] = owns_namespace) -> TeardownReport:
    """Stop and remove everything of the stack in ``directory`` (its namespaces: ``owns``)."""
    report = TeardownReport()
    for stage, grace in zip(_recorded_in_stages(directory), STAGE_GRACE, strict=False):
        report.processes += stop_groups(stage, grace=grace)
    mine = _ancestors()
    stray = [p for p in pids_naming(str(directory.resolve()) + "/") if p not in mine]
    terminate(stray, grace=5)
    report.processes += stray
    namespaces = [n for n in list_namespaces() if owns(n)]
    inside = [p for n in namespaces for p in pids_in(n) if p not in mine]
    terminate(inside, grace=5)
    report.processes += inside
    for namespace in namespaces:
        delete_namespace(namespace)
    report.namespaces = namespaces
    shutil.rmtree(directory, ignore_errors=True)
    return report
