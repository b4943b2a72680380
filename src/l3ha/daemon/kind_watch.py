"""The watch half of one kind of placement: observe, judge, gate, act. I/O: through its kind.

The daemon watches routers on L3 agents, networks on DHCP agents (``--dhcp``) and
router gateways on OVN gateway chassis the same way; a kind (a ``WatchedKind``, which
does here what most kinds do alike; ``l3ha.daemon.watch_kinds``) supplies only how to read
its agents and world, what to decide, how to run one decision through its operation and
its names. ``KindWatch`` does the rest once for all of them:

1. ``look``: read the agents (one call), fold their heartbeats into a health state
   with the daemon's policy (an agent is dead when its heartbeat value has not
   changed for ``dead_after`` on l3ha's clock, ``dead_observations`` times in a row),
   have the kind refresh its world for the agents whose verdict changed, ask its
   second channel (given the agents it may confirm dead early,
   ``health.confirm_candidates``), apply the fleet and zone gates. A failed read halts
   (never act on stale data); for kinds that ask for it, so does a read slower than the
   interval (the reads only: the second channel's probes, which wait out their timeout
   on a dark node, are not counted).
2. ``report``: one event per verdict change, per halt when it begins, when every gate
   has cleared and when a read failed (named by the kind: ``halt``/``dhcp_halt``).
3. ``act`` (the leader only, when nothing halts): evacuate each dead agent, then
   decide again on the world the evacuations left and run the rest, each within what
   the shared move budget allows; an operation's refusal is reported, not raised, and
   so is a cloud error (the next cycle tries again). The executor's re-checks hold the
   cycle's DEAD verdicts (``ExecutorOptions.judged_dead``): an agent l3ha judged dead
   stays dead to them until its heartbeat changes, however long the server's ``alive``
   flag lags (``--dead-after`` below Neutron's agent_down_time, ``--dataplane-confirms``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from l3ha import health
from l3ha.clock import Clock
from l3ha.daemon.decide import Decision, overlay
from l3ha.daemon.logevents import event, host_names, log_move, log_verdict_changes, named
from l3ha.daemon.settings import WatchSettings
from l3ha.errors import L3haError, SafetyHaltError
from l3ha.executor import ExecutorOptions
from l3ha.health import HealthPolicy, HealthState, Verdict, snapshot_gate
from l3ha.journal import Journal
from l3ha.model import Agent, Halt
from l3ha.operations.request import OperationResult

Result = OperationResult[Any, Any]

#: Every watch decision is journalled as the daemon's, with its reason.
BY_WATCH = ("by", "watch")
#: The action every kind has: a dead agent's objects moved off it (run before the rest).
EVACUATE = "evacuate"


@dataclass(frozen=True, slots=True)
class KindNames:
    """How a kind's events and gates are named: ``prefix`` starts every event's name
    (``dhcp_``: ``dhcp_halt``), ``gates`` names them in ``resumed``; ``journal_halts``:
    each halt is an operation of the journal; ``slow_read_halts``: a read slower than the
    interval is stale."""

    prefix: str = ""
    gates: str = "every gate has cleared"
    journal_halts: bool = True
    slow_read_halts: bool = True


@dataclass(frozen=True)
class RunArgs:
    """What every operation a cycle runs shares: execution options and the stop check."""

    execution: ExecutorOptions
    should_stop: Callable[[], bool]
    notify: Callable[[str], None] = lambda text: event("notice", message=text)


class WatchedKind:
    """What a kind supplies to its watch half: its agents and world (``refresh``: the world
    of this cycle given the agents whose verdict changed; ``placements``: objects per agent
    at the last reading; ``current``: the world as known now), what to decide, one
    decision run through its operation (``SafetyHaltError``: refused), its move events,
    what to read again after a run (``acted(None)``: after a failure), its names.

    What most kinds do alike is done here: a world read whole when due (``read_world``,
    ``count``), no second channel; a kind overrides what it does differently."""

    names = KindNames()
    #: What the kind moves, as its move events name it.
    moved = "router"

    def __init__(self, journal: Journal, clock: Clock) -> None:
        self.journal, self.clock = journal, clock
        self.full_resync = 30
        self.world: Any = None
        self._cycles = 0
        self.auto_rebalance = False

    def read_agents(self) -> list[Agent]:
        raise NotImplementedError

    def read_world(self) -> Any:
        raise NotImplementedError

    def decide(self, world: Any, verdict_of: Mapping[str, Verdict]) -> list[Decision]:
        raise NotImplementedError

    def run(
        self, decision: Decision, verdict_of: Mapping[str, Verdict], budget: int, args: RunArgs
    ) -> Result:
        raise NotImplementedError

    def count(self, world: Any, agent_id: str) -> int:
        """Objects on the agent (for its verdict)."""
        raise NotImplementedError

    def refresh(self, agents: Sequence[Agent], changed: set[str]) -> Any:
        """The whole world read again when a verdict changed, after a run, or when due."""
        self._cycles += 1
        if self.world is None or changed or self._cycles % self.full_resync == 0:
            self.world = self.read_world()
        return self.world

    def placements(self) -> dict[str, int]:
        world = self.current()
        return {} if world is None else {a: self.count(world, a) for a in host_names(world)}

    def second_channel(
        self, world: Any, judged: dict[str, Verdict], confirmable: Sequence[str]
    ) -> dict[str, Verdict]:
        return judged

    def log_moves(self, decision: Decision, result: Result) -> None:
        for executed in result.executed:
            for move in executed.run.results:
                log_move(decision, move, executed.snapshot, self.moved, self.names.prefix + "move")

    def current(self) -> Any:
        return self.world

    def acted(self, result: Result | None) -> None:
        self.world = None  # read again next cycle: the moves (or a failure) changed it

    def take_over(self, args: RunArgs) -> None:
        """Newly leading: nothing to finish first."""

    def configure(self, settings: WatchSettings) -> None:
        """New settings (at start and on SIGHUP)."""
        self.full_resync = max(1, settings.full_resync)
        self.auto_rebalance = settings.auto_rebalance

    def _ctx_args(self, args: RunArgs, observer: Any) -> dict[str, Any]:
        """An operation context's handles (after its cloud); ``observer``: how it reads."""
        return {"journal": self.journal, "clock": self.clock, "notify": args.notify,
                "should_stop": args.should_stop, "observer": observer}  # fmt: skip

    def _judged(self, verdict_of: Mapping[str, Verdict]) -> Callable[[], Any]:
        """The world read afresh as l3ha judges it."""
        return lambda: overlay(self.read_world(), verdict_of)

    @staticmethod
    def _request_args(decision: Decision, budget: int, args: RunArgs) -> dict[str, Any]:
        """What every kind's request of a watch decision carries."""
        return {"execution": args.execution, "move_budget": budget,
                "journal_args": (BY_WATCH, ("reason", decision.reason))}  # fmt: skip


@dataclass(frozen=True)
class View:
    """What one cycle saw: the world (None when a read failed), verdicts and halts."""

    world: Any
    verdicts: Mapping[str, Verdict] = field(default_factory=dict)
    halts: tuple[Halt, ...] = ()
    read_seconds: float = 0.0
    error: str = ""
    hosts_of: Mapping[str, str] = field(default_factory=dict)
    judged_dead: Mapping[str, str] = field(default_factory=dict)

    @property
    def halted(self) -> bool:
        return bool(self.halts) or self.world is None

    def hosts(self, verdict: Verdict) -> list[str]:
        """The hosts of the agents with this verdict, sorted."""
        if self.world is None:
            return []
        return sorted(
            self.hosts_of[a]
            for a, v in self.verdicts.items()
            if v is verdict and a in self.hosts_of
        )


@dataclass(frozen=True)
class Acted:
    """What one cycle's actions did."""

    results: tuple[tuple[Decision, Result], ...] = ()
    refusals: tuple[tuple[Decision, str], ...] = ()
    errors: tuple[tuple[Decision, str], ...] = ()
    moves_started: int = 0

    @property
    def failed(self) -> bool:
        return bool(self.errors) or any(r.exit_code for _, r in self.results)


class KindWatch:
    """Keeps one kind's health state between cycles (see the module docstring)."""

    def __init__(self, kind: WatchedKind, policy: HealthPolicy, interval: float) -> None:
        self.kind = kind
        self.policy = policy
        self.interval = interval
        self.state = HealthState()
        self.previous: dict[str, Verdict] = {}
        self._halts: set[tuple[str, str]] = set()
        self._reported: dict[str, Verdict] = {}

    def event(self, name: str, level: int = logging.INFO, /, **fields: object) -> None:
        event(self.kind.names.prefix + name, level, **fields)

    # --- observing --------------------------------------------------------

    def look(self, now: float, wall: float, clock_now: Callable[[], float]) -> View:
        """One observation; ``clock_now`` times the reads."""
        try:
            agents = self.kind.read_agents()
            self.state = health.observe(self.state, agents, now, self.policy, wall=wall)
            judged = health.verdicts(self.state, agents, now, self.policy, self.kind.placements())
            changed = {a for a, v in judged.items() if self.previous.get(a) is not v}
            world = self.kind.refresh(agents, changed)
        except L3haError as exc:
            self.kind.acted(None)
            return self._failed(clock_now() - now, str(exc))
        # the reads only: a probe waiting out its timeout on a dark node is no stale read
        read_seconds = clock_now() - now
        confirmable = health.confirm_candidates(self.state, judged, now, self.policy)
        judged = self.kind.second_channel(world, judged, confirmable)
        self.previous = dict(judged)
        halts = health.fleet_halts(self.state, judged, now, self.policy)
        stale = snapshot_gate(True, read_seconds, self.interval)
        if stale and self.kind.names.slow_read_halts:
            halts.append(stale)
        dead = {a.id: a.heartbeat_timestamp for a in agents if judged.get(a.id) is Verdict.DEAD}
        hosts = host_names(world)
        return View(world, judged, tuple(halts), read_seconds, hosts_of=hosts, judged_dead=dead)

    def _failed(self, seconds: float, error: str) -> View:
        halt = snapshot_gate(False, seconds, self.interval)
        halts = (halt,) if halt and self.kind.names.slow_read_halts else ()
        return View(None, dict(self.previous), halts, seconds, error)

    def report(self, view: View) -> list[Halt]:
        """Log what changed since the last cycle; the halts that began now."""
        if view.world is not None:
            log_verdict_changes(
                self.kind.names.prefix + "verdict", view.verdicts, self._reported, view.hosts_of
            )
            self._reported = dict(view.verdicts)
        keys = {(h.reason.value, str(h.evidence.get("zone", ""))): h for h in view.halts}
        began = [halt for key, halt in keys.items() if key not in self._halts]
        for halt in began:
            self.event("halt", logging.WARNING, reason=halt.reason.value, message=halt.message)
        if self._halts and not keys:
            self.event("resumed", reason=self.kind.names.gates)
        self._halts = set(keys)
        if view.error:
            self.event("read_failed", logging.ERROR, error=view.error)
        return began

    # --- acting -----------------------------------------------------------

    def act(self, view: View, budget: int, args: RunArgs) -> Acted:
        """Evacuations first, then what is left to do on the world they left."""
        if view.world is None:
            return Acted()
        decisions = self.kind.decide(view.world, view.verdicts)
        evacuations = [d for d in decisions if d.action.value == EVACUATE]
        acted = self._run_all(evacuations, view, budget, args, Acted())
        world = self.kind.current()
        if world is not None and len(evacuations) < len(decisions):
            later = [
                d for d in self.kind.decide(world, view.verdicts) if d.action.value != EVACUATE
            ]
            acted = self._run_all(later, view, budget, args, acted)
        return acted

    def _run_all(
        self, decisions: list[Decision], view: View, budget: int, args: RunArgs, acted: Acted
    ) -> Acted:
        for decision in decisions:
            remaining = budget - acted.moves_started
            if remaining <= 0:
                self.event("budget_exhausted", logging.WARNING, **self._about(decision))
                break
            acted = self._one(decision, view, remaining, args, acted)
        return acted

    def _one(
        self, decision: Decision, view: View, budget: int, args: RunArgs, acted: Acted
    ) -> Acted:
        self.event("action", **self._about(decision), reason=decision.reason)
        # the executor's re-checks hold this cycle's verdicts, not the server's alive flags
        judged = replace(args, execution=replace(args.execution, judged_dead=view.judged_dead))
        try:
            result = self.kind.run(decision, view.verdicts, budget, judged)
        except SafetyHaltError as exc:
            self.event("refused", logging.WARNING, **self._about(decision), reason=str(exc))
            return replace(acted, refusals=(*acted.refusals, (decision, str(exc))))
        except L3haError as exc:
            self.event("action_error", logging.ERROR, **self._about(decision), error=str(exc))
            self.kind.acted(None)
            return replace(acted, errors=(*acted.errors, (decision, str(exc))))
        self.kind.log_moves(decision, result)
        self.kind.acted(result)
        return replace(
            acted,
            results=(*acted.results, (decision, result)),
            moves_started=acted.moves_started + result.moves_started,
        )

    def _about(self, decision: Decision) -> dict[str, object]:
        """An action event's fields: the action, its agent's id and host."""
        hosts = host_names(self.kind.current())
        return {"action": decision.action.value, **named("agent", decision.agent, hosts)}
