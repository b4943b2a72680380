"""The watch daemon's loop: observe, judge, decide, act, report — every interval. I/O: all of it.

Every instance observes (so its metrics and verdicts stay live); only the
leader acts. A cycle:

1. leadership: a follower tries to take the lock; on taking it, the world is
   read in full and interrupted operations are finished (the kind's ``take_over``);
2. the watch half of the cloud's kind (``l3ha.daemon.kind_watch``): routers on L3
   agents, or on ML2/OVN (``Parts.ovn``) router gateways on gateway chassis —
   heartbeats, verdicts, the fleet gates, the second channel; if no gate halts and
   this instance leads, decisions run through the operations layer within the move
   budget; with ``--dhcp`` the DHCP networks' half the same way, on the budget left;
3. metrics, one log event per decision, the status file ``l3ha check``
   reads (``l3ha.daemon.status``), the systemd watchdog.

Router weights come from ``Parts.weights`` and, with a ``Parts.weigher``
(``l3ha.measurement.Weigher``), from measured sources read again only every
``weights_interval`` seconds; a source that cannot be read is a warning.

SIGTERM (``request_stop``): no new move starts, the moves in flight finish
(bounded by the shutdown timeout), leadership is released, exit 0. SIGHUP
(``request_reload``): the configuration is read again before the next cycle.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from l3ha.clock import Clock
from l3ha.cloud.base import Cloud
from l3ha.cloud.dhcp_base import DhcpCloud
from l3ha.daemon.budget import MoveBudget
from l3ha.daemon.kind_watch import Acted, KindWatch, RunArgs, View
from l3ha.daemon.leader import Leadership
from l3ha.daemon.logevents import event, moves_by_outcome
from l3ha.daemon.metrics import WatchMetrics
from l3ha.daemon.sdnotify import Notifier
from l3ha.daemon.settings import WatchSettings
from l3ha.daemon.status import dhcp_status, status_document, stopped_document, write_status
from l3ha.daemon.watch_kinds import DhcpKind, GatewayKind, RouterKind
from l3ha.errors import CoordinationError, L3haError
from l3ha.executor import ExecutorOptions
from l3ha.health import HealthPolicy, Verdict, summarize
from l3ha.journal import Journal, OperationStatus
from l3ha.measurement import Weigher
from l3ha.model import Router, Snapshot
from l3ha.ovn_model import DEFAULT_MIN_CHASSIS, OvnSnapshot
from l3ha.weights import WeightPolicy, weight_distribution

if TYPE_CHECKING:
    from l3ha.cloud.ovn import NeutronOvn

#: The journal's kind of a halt's operation (``l3ha history`` lists it).
HALT_KIND = "halt"
#: Verdicts that count as a disrupted agent for the move budget's lower rate.
_DISRUPTED = frozenset({Verdict.DEAD, Verdict.SUSPECT, Verdict.PARTITIONED})


@dataclass
class Parts:
    """What a watcher is made of; the CLI builds it, tests may hand in their own."""

    settings: WatchSettings
    cloud: Cloud
    journal: Journal
    clock: Clock
    leadership: Leadership | None = None
    metrics: WatchMetrics | None = None
    notifier: Notifier = field(default_factory=Notifier)
    weights: WeightPolicy = field(default_factory=WeightPolicy)
    reload: Callable[[], WatchSettings] | None = None
    weigher: Weigher | None = None
    dhcp_cloud: DhcpCloud | None = None  # with settings.dhcp: DHCP networks are watched too
    ovn: NeutronOvn | None = None  # an ML2/OVN cloud: gateway chassis instead of L3 agents
    min_chassis: int = DEFAULT_MIN_CHASSIS  # on ML2/OVN: live chassis every router keeps


class Watcher:
    """The daemon (see the module docstring)."""

    def __init__(self, parts: Parts) -> None:
        self.parts = parts
        self.clock = parts.clock
        self.stopping = threading.Event()
        self._reload = threading.Event()
        self._ready = False
        self.cycles = 0
        self._weights_exported = 0
        handles = (parts.journal, parts.clock)
        self.kind: RouterKind | GatewayKind = (
            RouterKind(parts.cloud, *handles, self.weights)
            if parts.ovn is None
            else GatewayKind(parts.ovn, *handles, parts.min_chassis, self.weights)
        )
        self.main: KindWatch = KindWatch(self.kind, HealthPolicy(), parts.settings.interval)
        self.dhcp: KindWatch | None = None
        self._dhcp_last: tuple[View, Acted] | None = None  # for the status file
        self._last_status: dict[str, object] | None = None  # the status file's last document
        self._configure(parts.settings)

    # --- configuration ----------------------------------------------------

    def _configure(self, settings: WatchSettings) -> None:
        """Apply settings (at start and on SIGHUP); what was observed so far is kept."""
        self.settings = settings
        policy = HealthPolicy(
            agent_down_time=settings.dead_after,
            dead_after_observations=settings.dead_observations,
            max_dead_fraction=settings.max_dead_fraction,
            report_interval=settings.report_interval,
        )
        self.main.policy, self.main.interval = policy, settings.interval
        self.kind.configure(settings)
        if self.parts.weigher is not None:  # measured weights keep their last reading
            self.parts.weigher.interval = settings.weights_interval
        self._configure_dhcp(settings, policy)
        self.budget = MoveBudget(
            settings.max_moves_per_minute,
            settings.disrupted_moves_per_minute,
            settings.max_moves_per_cycle,
            self.clock.monotonic(),
        )

    def _configure_dhcp(self, settings: WatchSettings, policy: HealthPolicy) -> None:
        if not settings.dhcp or self.parts.dhcp_cloud is None:
            self.dhcp = None
            self._dhcp_last = None
            return
        if self.dhcp is None:
            kind = DhcpKind(self.parts.dhcp_cloud, self.parts.journal, self.clock)
            self.dhcp = KindWatch(kind, policy, settings.interval)
        self.dhcp.policy, self.dhcp.interval = policy, settings.interval
        self.dhcp.kind.configure(settings)

    def request_stop(self) -> None:
        """SIGTERM: finish what is in flight, then stop."""
        self.stopping.set()

    def request_reload(self) -> None:
        """SIGHUP: read the configuration again before the next cycle."""
        self._reload.set()

    # --- the loop --------------------------------------------------------

    def run(self) -> int:
        """Cycle until stopped (or once); the exit code."""
        try:
            while not self.stopping.is_set():
                started = self.clock.monotonic()
                self._maybe_reload()
                self.cycle()
                if self.settings.once:
                    break
                rest = self.settings.interval - (self.clock.monotonic() - started)
                self.stopping.wait(max(0.0, rest))
        finally:
            self._shutdown()
        self._write_stopped()  # only a clean stop: a crash leaves the status to go stale
        return 0

    def _maybe_reload(self) -> None:
        if not self._reload.is_set() or self.parts.reload is None:
            return
        self._reload.clear()
        try:
            self._configure(self.parts.reload())
        except L3haError as exc:
            event("reload_failed", logging.ERROR, error=str(exc))
            return
        event("reloaded", config_files=list(self.settings.config_files))

    def _shutdown(self) -> None:
        self.parts.notifier.stopping("l3ha watch stopping")
        if self.parts.leadership is not None:
            self.parts.leadership.release()
        if self.parts.metrics is not None:
            self.parts.metrics.leader.set(0)
        event("stopped", cycles=self.cycles)

    def cycle(self) -> None:
        """One cycle (see the module docstring)."""
        started = self.clock.monotonic()
        self.cycles += 1
        leader = self._lead()
        view, acted = self._watch(self.main, leader, started)
        self.weights()  # the measured weights are read again when their interval is up
        if self.dhcp is not None:
            self._dhcp_last = self._watch(self.dhcp, leader, self.clock.monotonic(), view)
            if self.parts.metrics is not None:
                self._count_moves(self.parts.metrics, self._dhcp_last[1])
        seconds = self.clock.monotonic() - started
        self._after_cycle(view, acted, seconds)

    def _watch(
        self, half: KindWatch, leader: bool, now: float, main: View | None = None
    ) -> tuple[View, Acted]:
        """One kind's half of a cycle from ``now``: look, report (its halts journalled if the
        kind says so) and, when leading and nothing halts it or the ``main`` kind, act (the
        DHCP half: the budget the main kind left)."""
        view = half.look(now, self.clock.wall().timestamp(), self.clock.monotonic)
        for halt in half.report(view):
            if half.kind.names.journal_halts and not self.settings.dry_run:
                _journal_halt(self.parts.journal, halt.reason.value, halt.message)
        if not leader or view.halted or (main is not None and (main.halted or not self._may_act())):
            return view, Acted()
        return view, self._act(half, view, main or view)

    # --- leadership -------------------------------------------------------

    def _lead(self) -> bool:
        leadership = self.parts.leadership
        if leadership is None:
            leader = True
            gained = self.cycles == 1
        else:
            was = leadership.is_leader
            try:
                leader = leadership.try_acquire() if not was else leadership.still_leader()
            except CoordinationError as exc:
                event("coordination_error", logging.ERROR, error=str(exc))
                leader = False
            gained = leader and not was
            if was and not leader:
                event("leadership_lost", logging.WARNING, reason=leadership.lost_reason)
        if self.parts.metrics is not None:
            self.parts.metrics.leader.set(1 if leader else 0)
        if gained:
            self._take_over()
        return leader

    def _take_over(self) -> None:
        """Newly leading: read everything, finish what an earlier leader left open."""
        event("leading", member=self._member)
        self.kind.take_over(self._run_args())

    @property
    def _member(self) -> str:
        """This instance's member id ("local" without leader election)."""
        return self.parts.leadership.member_id if self.parts.leadership else "local"

    def _may_act(self) -> bool:
        if self.stopping.is_set():
            return False
        leadership = self.parts.leadership
        return leadership is None or leadership.still_leader()

    # --- acting -----------------------------------------------------------

    def weights(self) -> WeightPolicy:
        """The router weights now (measured ones refreshed when their interval is up)."""
        weigher = self.parts.weigher
        return weigher.policy() if weigher is not None else self.parts.weights

    def _run_args(self) -> RunArgs:
        s = self.settings
        options = ExecutorOptions(
            concurrency=s.concurrency, port_timeout=s.port_timeout, dry_run=s.dry_run
        )
        return RunArgs(options, should_stop=lambda: not self._may_act())

    def _act(self, half: KindWatch, view: View, main: View) -> Acted:
        """One kind's decisions within what the shared budget allows now (its disrupted
        rate judged from the main kind's verdicts)."""
        disrupted = sum(1 for v in main.verdicts.values() if v in _DISRUPTED)
        budget = self.budget.available(self.clock.monotonic(), disrupted)
        acted = half.act(view, budget, self._run_args())
        self.budget.spend(acted.moves_started, self.clock.monotonic())
        return acted

    # --- reporting --------------------------------------------------------

    def _after_cycle(self, view: View, acted: Acted, seconds: float) -> None:
        metrics = self.parts.metrics
        if metrics is not None:
            self._export(metrics, view, acted, seconds)
        self._write_status(view)
        if not self._ready and view.world is not None:
            self._ready = True
            self.parts.notifier.ready("observing the cloud")
            event("ready", agents=len(view.hosts_of), routers=len(view.world.routers))
        self.parts.notifier.watchdog()

    def _write_status(self, view: View) -> None:
        leadership = self.parts.leadership
        document = status_document(
            member=self._member,
            leader=leadership.is_leader if leadership else True,
            updated=time.time(),
            interval=self.settings.interval,
            halts=view.halts,
            verdicts=summarize(view.verdicts),
            partitioned=view.hosts(Verdict.PARTITIONED),
            read_error=view.error,
            dhcp=self._dhcp_document(),
        )
        self._last_status = document
        _save_status(self.settings.state_dir, document)

    def _write_stopped(self) -> None:
        document = stopped_document(
            self._last_status,
            member=self._member,
            stopped=time.time(),
            interval=self.settings.interval,
        )
        _save_status(self.settings.state_dir, document)

    def _dhcp_document(self) -> dict[str, object] | None:
        if self.dhcp is None or self._dhcp_last is None:
            return None
        view, acted = self._dhcp_last
        error = view.error or (acted.errors[-1][1] if acted.errors else "")
        return dhcp_status(view.halts, summarize(view.verdicts), error)

    def _export(self, metrics: WatchMetrics, view: View, acted: Acted, seconds: float) -> None:
        metrics.cycle.observe(seconds)
        halt = view.halts[0] if view.halts else None
        metrics.set_gate(halt is not None, halt.reason.value if halt else "")
        if view.error:
            metrics.api_errors.labels(kind="read").inc()
        for decision, _error in acted.errors:
            metrics.api_errors.labels(kind=decision.action.value).inc()
        self._count_moves(metrics, acted)
        world = view.world
        if world is None:
            return
        metrics.set_agents_by_verdict(summarize(view.verdicts))
        metrics.set_partitioned(view.hosts(Verdict.PARTITIONED))
        weights = self.weights()
        if isinstance(world, Snapshot):
            metrics.unhosted.set(len(world.unhosted_routers()))
            metrics.set_routers_per_agent(routers_per_host(world, weights))
        elif isinstance(world, OvnSnapshot):
            metrics.unhosted.set(
                sum(1 for r in world.routers if world.group(r.id) and world.primary(r.id) is None)
            )
            metrics.set_routers_per_agent(primaries_per_host(world, weights))
        metrics.set_weights(
            (weights.weight(r) for r in world.routers),
            weight_distribution(weights, world.routers),
        )
        self._export_weight_readings(metrics)
        if not view.halted and not acted.failed:
            metrics.last_good_cycle.set(time.time())

    @staticmethod
    def _count_moves(metrics: WatchMetrics, acted: Acted) -> None:
        for (action, outcome), count in moves_by_outcome(acted.results).items():
            metrics.count_move(action, outcome, count)

    def _export_weight_readings(self, metrics: WatchMetrics) -> None:
        weigher = self.parts.weigher
        if weigher is None or weigher.last is None or weigher.refreshes == self._weights_exported:
            return
        self._weights_exported = weigher.refreshes
        metrics.weights_measured_at(time.time(), len(weigher.last.warnings))


def routers_per_host(snapshot: Snapshot, weights: WeightPolicy) -> dict[str, tuple[int, int]]:
    """Routers and busy routers per agent host (the metrics, the demo's tables)."""
    bound = {
        a.host: [b.router_id for b in snapshot.bindings_of_agent(a.id)] for a in snapshot.agents
    }
    return _with_busy(bound, snapshot.routers_by_id, weights)


def primaries_per_host(world: OvnSnapshot, weights: WeightPolicy) -> dict[str, tuple[int, int]]:
    """Primaries and busy primaries per gateway chassis host (ML2/OVN's metrics)."""
    primaries = {c.host: world.primaries_of(c.id) for c in world.chassis}
    return _with_busy(primaries, world.routers_by_id, weights)


def _with_busy(
    ids_by_host: Mapping[str, Sequence[str]], routers: Mapping[str, Router], weights: WeightPolicy
) -> dict[str, tuple[int, int]]:
    """Per host: how many routers it has, and how many of them are busy."""
    counts: dict[str, tuple[int, int]] = {}
    for host, ids in ids_by_host.items():
        busy = sum(1 for r in ids if r in routers and weights.is_busy(routers[r]))
        counts[host] = (len(ids), busy)
    return counts


def _save_status(state_dir: Path, document: dict[str, object]) -> None:
    """Write the status file; a failure is logged, never fatal."""
    try:
        write_status(state_dir, document)
    except OSError as exc:
        event("status_write_failed", logging.ERROR, error=str(exc))


def _journal_halt(journal: Journal, reason: str, message: str) -> None:
    """A halt as an operation of the journal (no moves, finished at once), so that
    ``l3ha history`` shows it; a journal that cannot be written is logged, not fatal."""
    try:
        op_id, _ = journal.begin_operation(HALT_KIND, {"reason": reason, "message": message})
        journal.finish_operation(op_id, OperationStatus.DONE, message)
    except (sqlite3.Error, OSError) as exc:
        event("journal_failed", logging.ERROR, error=str(exc))
