"""Starting, resuming and finishing a rolling run around ``run_rolling``. I/O: cloud (reads),
the rolling journal and l3ha's journal in the state dir, the probe (a thread) and its report.

Everything that can refuse a run does so before anything is written:
``resume_shape`` finds the stopped run ``--resume`` continues and checks the
options given against it; ``check_hosts`` that every host has an L3 agent (on
ML2/OVN: is a gateway chassis, and the run's participant is then the chassis,
``gateway_participant.GatewaySide``, in place of the L3 and DHCP agents);
``traffic_guard`` that the probe has targets when ``--max-outage`` needs
them. ``execute`` then opens the journals (refusing while another run is
live), runs the probe for the whole run, and writes its report when the
run ends, however it ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from l3ha.clock import SystemClock
from l3ha.cloud.adapter import NeutronCloud
from l3ha.cloud.dhcp import NeutronDhcp
from l3ha.errors import BadInputError
from l3ha.journal import Journal, StartedBy
from l3ha.model import Snapshot
from l3ha.operations import OperationContext
from l3ha.operations.rolling.dhcp_participant import DhcpSide
from l3ha.operations.rolling.flow import AskContinue, Say, never_continue, run_rolling
from l3ha.operations.rolling.guard import TrafficGuard, probe_config, router_targets
from l3ha.operations.rolling.l3_participant import L3Side
from l3ha.operations.rolling.participants import Participant, RunContext
from l3ha.operations.rolling.plan import RollingRequest, UpgradeStep
from l3ha.operations.rolling.record import DB_NAME, RollingRecord, RunRecord, RunStatus
from l3ha.operations.rolling.report import RollingReport
from l3ha.probe.report import summary_document, write_report
from l3ha.probe.targets import Target, TargetKind, check_unique

if TYPE_CHECKING:
    from l3ha.cloud.ovn import NeutronOvn


@dataclass(frozen=True)
class RunShape:
    """What a run rolls and how: the hosts and the upgrade step (with its command)."""

    hosts: tuple[str, ...]
    upgrade: UpgradeStep | None  # None: no step option given
    command: str | None = None
    shell: bool = False

    def document(self) -> dict[str, Any]:
        """As the rolling journal keeps it, for ``--resume``."""
        upgrade = self.upgrade.value if self.upgrade else None
        return {"hosts": list(self.hosts), "mode": upgrade, "command": self.command,
                "shell": self.shell}  # fmt: skip


@dataclass(frozen=True)
class Hooks:
    """How the run talks to the operator: progress, command output, the ``--pause`` question."""

    say: Say
    on_output: Say
    ask_continue: AskContinue = never_continue


def resumable_run(state_dir: Path) -> RunRecord:
    """The last run, which ``--resume`` continues; bad input when there is none to continue."""
    if not (state_dir / DB_NAME).exists():
        raise BadInputError(f"--resume: no rolling run recorded in {state_dir}")
    with RollingRecord(state_dir) as record:
        latest = record.latest_run()
    if latest is None:
        raise BadInputError(f"--resume: no rolling run recorded in {state_dir}")
    if latest.status is RunStatus.DONE:
        raise BadInputError(f"--resume: the last rolling run ({latest.id}) finished; nothing to do")
    return latest


def _stored_shape(stored: dict[str, Any]) -> RunShape:
    command = stored.get("command")
    mode = stored.get("mode") or (UpgradeStep.RUN if command else UpgradeStep.REHEARSAL)
    return RunShape(tuple(stored["hosts"]), UpgradeStep(mode), command, bool(stored.get("shell")))


def resume_shape(stored: dict[str, Any] | None, given: RunShape) -> RunShape:
    """The shape to run: ``given`` for a new run (which must name hosts and an upgrade step);
    on ``--resume`` the ``stored`` run's, which ``given`` may repeat but not change (apart
    from a new ``--run`` command)."""
    if stored is None:
        if not given.hosts:
            raise BadInputError("name the hosts: --hosts HOST[,HOST...]")
        if given.upgrade is None:
            raise BadInputError(
                "say what happens to each drained host: --run COMMAND, --pause or --no-run"
            )
        return given
    shape = _stored_shape(stored)
    if given.hosts and given.hosts != shape.hosts:
        raise BadInputError(
            f"--resume: the run to resume rolls {','.join(shape.hosts)}, not "
            f"{','.join(given.hosts)}"
        )
    if given.upgrade is not None and shape.upgrade and given.upgrade is not shape.upgrade:
        raise BadInputError(
            f"--resume: the run to resume was started with --{shape.upgrade.value}, "
            f"not --{given.upgrade.value}"
        )
    if given.command is not None:
        return RunShape(shape.hosts, shape.upgrade, given.command, given.shell)
    return shape


def check_hosts(
    cloud: NeutronCloud, hosts: tuple[str, ...], ovn: NeutronOvn | None = None
) -> Snapshot:
    """Today's snapshot, once every host is known to have an L3 agent (with ``ovn``: to be
    a gateway chassis) (else bad input)."""
    snapshot = cloud.read_snapshot()
    if ovn is not None:
        world = ovn.read_ovn_snapshot()
        for host in hosts:
            world.find_chassis(host)
        return snapshot
    for host in hosts:
        snapshot.find_agent(host)
    return snapshot


def participants_of(cloud: NeutronCloud, ovn: NeutronOvn | None) -> list[Participant]:
    """The gateway chassis on ML2/OVN (``ovn``), else the L3 and DHCP agents."""
    if ovn is not None:
        from l3ha.operations.rolling.gateway_participant import GatewaySide

        return [Participant(GatewaySide(ovn))]
    return [Participant(L3Side()), Participant(DhcpSide(NeutronDhcp(cloud)))]


def traffic_guard(
    snapshot: Snapshot,
    targets: list[Target],
    routers: tuple[TargetKind, int] | None,
    request: RollingRequest,
    timing: tuple[float, float],
) -> TrafficGuard | None:
    """The probe of the run (None: nothing to probe): ``targets`` and, with ``routers`` (kind,
    TCP port), every router's gateway address, sampled every ``timing[0]`` s with a
    ``timing[1]`` s timeout."""
    by_router = router_targets(snapshot, *routers) if routers else {}
    if not targets and not by_router:
        if request.max_outage is not None:
            raise BadInputError("--max-outage needs probe targets (--tcp, ..., --probe-routers)")
        return None
    check_unique([*targets, *by_router.values()])
    return TrafficGuard(probe_config(targets, by_router, *timing, "rolling"), by_router)


def execute(
    cloud: NeutronCloud,
    request: RollingRequest,
    state_dir: Path | None,
    shape: RunShape,
    hooks: Hooks,
    *,
    guard: TrafficGuard | None = None,
    resume: RunRecord | None = None,
    output: Path | None = None,
    ovn: NeutronOvn | None = None,
) -> RollingReport:
    """Run (``state_dir`` None: dry run, nothing recorded) or resume the rolling maintenance
    (``ovn``: on ML2/OVN, over the hosts' gateway chassis)."""
    participants = participants_of(cloud, ovn)
    if state_dir is None:
        ctx = RunContext(OperationContext(cloud, None, SystemClock(), hooks.say), request)
        return run_rolling(ctx, None, participants, say=hooks.say, on_output=hooks.on_output)
    with RollingRecord(state_dir) as record:
        live = record.live_run()
        if live is not None:
            raise BadInputError(f"rolling run {live.id} is still running (pid {live.pid})")
        with (
            Journal(state_dir, started_by=StartedBy.ROLLING) as journal,
            _probing(guard, record, output, request, hooks.say),
        ):
            ops = OperationContext(cloud, journal, SystemClock(), hooks.say)
            ctx = RunContext(ops, request, guard)
            return run_rolling(
                ctx,
                record,
                participants,
                say=hooks.say,
                on_output=hooks.on_output,
                ask_continue=hooks.ask_continue,
                resume_run=resume.id if resume else None,
                request_doc=shape.document(),
            )


@contextmanager
def _probing(
    guard: TrafficGuard | None,
    record: RollingRecord,
    output: Path | None,
    request: RollingRequest,
    say: Say,
) -> Iterator[None]:
    """The probe running around the run; its report written however the run ends."""
    if guard is None:
        yield
        return
    guard.start()
    try:
        yield
    finally:
        result = guard.stop()
        if guard.error is not None:
            say(f"warning: the probe failed: {guard.error}")
        if result is not None:
            latest = record.latest_run()
            where = output or record.state_dir / f"rolling-{latest.id if latest else 0}"
            try:
                write_report(result, summary_document(result, request.max_outage, None), where)
            except OSError as exc:
                say(f"warning: cannot write the probe report in {where}: {exc}")
            else:
                say(f"probe report: {where}")
