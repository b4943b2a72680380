"""The DHCP half of a watch cycle (``l3ha watch --dhcp``). I/O: cloud reads and, through the
DHCP operations, writes; journal.

Each cycle it reads the DHCP agents (one call), folds their heartbeats into
a health state of their own with the same policy as the L3 agents (so a DHCP
agent is judged dead exactly as an L3 agent is: its heartbeat value not
changing for ``dead_after`` on l3ha's clock, ``dead_observations`` times in a
row), and applies the same fleet gates to them. It reads the whole DHCP
picture (networks, bindings, ports) when a verdict changed or it acted, and
every ``full_resync`` cycles otherwise. It acts only
when this instance leads, neither the router side nor its own gates halt,
and the cycle's move budget (shared with router moves) has room; then
``decide_dhcp`` says what to do and ``l3ha.operations.dhcp`` does it, over
the world as l3ha judges it, with only the DHCP agents judged alive as
targets.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from l3ha.clock import Clock
from l3ha.cloud.dhcp_base import DhcpCloud
from l3ha.daemon.decide import DhcpDecision, decide_dhcp, overlay, targets
from l3ha.daemon.logevents import event, host_names, log_verdict_changes, named
from l3ha.dhcp_model import DhcpSnapshot
from l3ha.errors import L3haError, SafetyHaltError
from l3ha.executor import ExecutorOptions
from l3ha.executor.dhcp import DhcpMoveResult, DhcpOutcome
from l3ha.health import (
    HealthPolicy,
    HealthState,
    Verdict,
    fleet_halts,
    observe,
    verdicts,
)
from l3ha.journal import Journal
from l3ha.model import Halt
from l3ha.operations.dhcp import DhcpContext, DhcpResult, run_dhcp_action
from l3ha.operations.request import DhcpRequest

#: Outcomes that did not start a move (they cost no budget).
_NOT_STARTED = frozenset({DhcpOutcome.SKIPPED, DhcpOutcome.PLANNED})


@dataclass(frozen=True)
class DhcpCycle:
    """What the DHCP half of one cycle saw and did."""

    verdicts: dict[str, Verdict] = field(default_factory=dict)
    halts: tuple[Halt, ...] = ()
    results: tuple[tuple[DhcpDecision, DhcpResult], ...] = ()
    refusals: tuple[tuple[DhcpDecision, str], ...] = ()
    error: str = ""
    moves_started: int = 0


class DhcpWatch:
    """Keeps the DHCP agents' health state and world between cycles."""

    def __init__(
        self, cloud: DhcpCloud, journal: Journal, clock: Clock, policy: HealthPolicy
    ) -> None:
        self.cloud = cloud
        self.journal = journal
        self.clock = clock
        self.policy = policy
        self.agents_per_network = 1
        self.full_resync = 30
        self.state = HealthState()
        self.previous: dict[str, Verdict] = {}
        self.world: DhcpSnapshot | None = None
        self.cycles = 0
        self._halts: set[str] = set()

    def reconfigure(self, policy: HealthPolicy, agents_per_network: int, full_resync: int) -> None:
        self.policy = policy
        self.agents_per_network = agents_per_network
        self.full_resync = max(1, full_resync)

    def cycle(
        self,
        now: float,
        wall: float,
        *,
        may_act: bool,
        budget: int,
        execution: ExecutorOptions,
        should_stop: Callable[[], bool],
    ) -> DhcpCycle:
        """Observe, judge, gate and (when ``may_act``) act; never raises a cloud error."""
        self.cycles += 1
        try:
            agents = self.cloud.list_dhcp_agents()
        except L3haError as exc:
            event("dhcp_read_failed", logging.ERROR, error=str(exc))
            return DhcpCycle(dict(self.previous), error=str(exc))
        self.state = observe(self.state, agents, now, self.policy, wall=wall)
        counts = self._network_counts()
        judged = verdicts(self.state, agents, now, self.policy, counts)
        changed = any(self.previous.get(a) is not v for a, v in judged.items())
        log_verdict_changes("dhcp_verdict", judged, self.previous, {a.id: a.host for a in agents})
        self.previous = dict(judged)
        halts = tuple(fleet_halts(self.state, judged, now, self.policy))
        self._report_halts(halts)
        needs_read = self.world is None or changed or self.cycles % self.full_resync == 0
        if needs_read:
            try:
                self.world = self.cloud.read_dhcp_snapshot()
            except L3haError as exc:
                event("dhcp_read_failed", logging.ERROR, error=str(exc))
                return DhcpCycle(judged, halts, error=str(exc))
        if halts or not may_act or self.world is None:
            return DhcpCycle(judged, halts)
        decisions = decide_dhcp(self.world, judged, self.agents_per_network)
        if decisions and budget <= 0:
            event("dhcp_budget_exhausted", logging.WARNING, **self._about(decisions[0]))
            return DhcpCycle(judged)
        return self._act(decisions, judged, budget, execution, should_stop)

    def _about(self, decision: DhcpDecision) -> dict[str, object]:
        """A DHCP action event's fields: the action, its agent's id and host."""
        hosts = host_names(self.world)
        return {"action": decision.action.value, **named("agent", decision.agent, hosts)}

    def _network_counts(self) -> dict[str, int]:
        if self.world is None:
            return {}
        return {a.id: len(self.world.networks_of_agent(a.id)) for a in self.world.agents}

    def _report_halts(self, halts: tuple[Halt, ...]) -> None:
        keys = {f"{h.reason.value}:{h.evidence.get('zone', '')}": h for h in halts}
        for key, halt in keys.items():  # each halt is logged when it begins
            if key not in self._halts:
                event("dhcp_halt", logging.WARNING, reason=halt.reason.value, message=halt.message)
        if self._halts and not keys:
            event("dhcp_resumed", reason="every DHCP gate has cleared")
        self._halts = set(keys)

    def _act(
        self,
        decisions: list[DhcpDecision],
        judged: dict[str, Verdict],
        budget: int,
        execution: ExecutorOptions,
        should_stop: Callable[[], bool],
    ) -> DhcpCycle:
        done = DhcpCycle(judged)
        for decision in decisions:
            remaining = budget - done.moves_started
            if remaining <= 0:
                event("dhcp_budget_exhausted", logging.WARNING, **self._about(decision))
                break
            done = self._one(
                decision, judged, remaining, execution=execution, should_stop=should_stop, done=done
            )
        if done.results:
            self.world = None  # read again next cycle: the moves changed it
        return done

    def _one(
        self,
        decision: DhcpDecision,
        judged: dict[str, Verdict],
        budget: int,
        *,
        execution: ExecutorOptions,
        should_stop: Callable[[], bool],
        done: DhcpCycle,
    ) -> DhcpCycle:
        request = DhcpRequest(
            decision.action,
            agent=decision.agent,
            to=targets(judged),
            agents_per_network=self.agents_per_network,
            execution=execution,
            move_budget=budget,
            journal_args=(("by", "watch"), ("reason", decision.reason)),
        )
        ctx = DhcpContext(
            self.cloud,
            self.journal,
            self.clock,
            notify=lambda text: event("notice", message=text),
            observer=lambda: overlay(self.cloud.read_dhcp_snapshot(), judged),
            should_stop=should_stop,
        )
        event("dhcp_action", **self._about(decision), reason=decision.reason)
        try:
            result = run_dhcp_action(ctx, request)
        except SafetyHaltError as exc:
            event("dhcp_refused", logging.WARNING, **self._about(decision), reason=str(exc))
            return replace(done, refusals=(*done.refusals, (decision, str(exc))))
        except L3haError as exc:
            event("dhcp_action_error", logging.ERROR, **self._about(decision), error=str(exc))
            return replace(done, error=str(exc))
        started = 0
        for executed in result.executed:
            for move in executed.run.results:
                started += move.outcome not in _NOT_STARTED
                _log_move(decision, move, executed.snapshot)
        return replace(
            done,
            results=(*done.results, (decision, result)),
            moves_started=done.moves_started + started,
        )


def _log_move(decision: DhcpDecision, move: DhcpMoveResult, snapshot: DhcpSnapshot) -> None:
    """One ``dhcp_move`` event: the ids, and the network's name and the agents' hosts beside."""
    network = snapshot.networks_by_id.get(move.move.network_id)
    names = {network.id: network.name} if network is not None else {}
    hosts = host_names(snapshot)
    event(
        "dhcp_move",
        action=decision.action.value,
        **named("network", move.move.network_id, names, "name"),
        **named("source", move.move.source, hosts),
        **named("target", move.target or move.move.target, hosts),
        outcome=move.outcome.value,
        reason=move.reason,
    )
