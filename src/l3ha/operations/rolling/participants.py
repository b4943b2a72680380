"""The agents of a host a rolling run takes out of service and back. I/O: cloud, journal
(through the kind's side).

A *participant* is one kind of agent on a network node. The run drains every
participant of a host before the maintenance command and, after it, has each
one prove itself (``read_agent``: the heartbeat the stable step watches),
pass its canary and be restored; one that fails is kept drained. A host
without the kind's agent (``present``) has no steps for it.

``Participant`` does this once for every kind of placement; a kind plugs in
with a ``Side`` that says only what differs: how to find its agent, what is
on it, its drain, undrain and moves onto the agent (through the kind's
operations: every write through the executor, journalled, read back), the
canary candidate and its words. The L3 agent is ``l3_participant.L3Side``,
the DHCP agent ``dhcp_participant.DhcpSide``.

Drain: the kind's drain, which must leave nothing on the agent and nothing it
moved waiting for its ports. Canary: the agent is enabled again (keeping
l3ha's drain mark in its description), one object drained from the host is
moved back onto it and must have its ports ACTIVE within ``--canary-timeout``
(and, when the guard watches its address, answer). Restore: the kind's
undrain, then, for a kind that ``returns_on_restore``, the rest of what was
drained comes back.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, Protocol

from l3ha.errors import L3haError
from l3ha.executor import AgentChange
from l3ha.executor.agents import AgentChangeResult
from l3ha.executor.options import ExecutorOptions
from l3ha.model import Agent
from l3ha.operations.context import OperationContext
from l3ha.operations.request import DRAIN_MARK, OperationResult
from l3ha.operations.rolling.guard import TrafficGuard
from l3ha.operations.rolling.plan import RollingRequest

CANARY_MARK = f"{DRAIN_MARK} canary"
DATAPLANE_POLL = 0.1  # seconds between looks at the guard while the canary's address is awaited
#: Journalled with every write of a rolling run, whatever its kind.
ROLLING_JOURNAL_ARGS = (("rolling", "yes"),)

#: Outcomes (of every kind) by which an object left its source or reached its target.
_ARRIVED = frozenset({"moved", "removed", "pending"})
#: Outcomes that are no problem for a rolling step.
_FINE = frozenset({"moved", "added", "removed", "skipped", "planned"})

Result = OperationResult[Any, Any]


@dataclass(frozen=True)
class StepResult:
    """How a step ended: ok, why not, and facts for the journal and the summary."""

    ok: bool
    reason: str = ""
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunContext:
    """What every step of a run works with."""

    ops: OperationContext
    request: RollingRequest
    guard: TrafficGuard | None = None


class SideTraits(NamedTuple):
    """How a kind's side is named in a rolling run, and what its canary and restore do."""

    name: str  # the participant's name in the steps: "l3", "dhcp"
    unit: str  # what it moves, plural, for the summary and messages: "routers", "networks"
    prefix: str  # before "agent", "drain", "undrain" in messages: "" or "DHCP "
    ports: str  # what must be ACTIVE after a move: "ports", "its DHCP port"
    canary_required: bool = False  # a canary step with nothing to move fails (else: enables)
    returns_on_restore: bool = False  # restore moves back what the drain moved off


class Side(Protocol):
    """What one kind of placement supplies to its rolling participant."""

    traits: SideTraits

    def present(self, run: RunContext, host: str) -> bool: ...

    def find_agent(self, run: RunContext, host: str) -> Agent: ...

    def get_agent(self, run: RunContext, agent_id: str) -> Agent: ...

    def on_agent(self, run: RunContext, agent_id: str) -> Collection[str]: ...

    def would_move(self, run: RunContext, host: str) -> int: ...

    def leaves(self, result: Any) -> bool:
        """Whether one move's result took its object off ``move.source`` (onto its target)."""
        ...

    def drain(self, run: RunContext, agent: Agent) -> Result: ...

    def undrain(self, run: RunContext, host: str) -> Result: ...

    def change_agent(self, run: RunContext, change: AgentChange, agent: Agent) -> AgentChangeResult:
        """One agent change through the kind's executor (journalled, read back)."""
        ...

    def pick_canary(self, run: RunContext, drained: list[str]) -> str | None: ...

    def move_onto(
        self, run: RunContext, agent: Agent, objects: Sequence[str], execution: ExecutorOptions
    ) -> Result: ...


def problem(result: Result) -> str:
    """Why an action did not finish, in a few words."""
    if result.problems:
        return "; ".join(result.problems)
    failed = [c for c in result.changes if not c.ok]
    if failed:
        return f"agent change failed: {failed[0].detail}"
    counts: Counter[str] = Counter()
    for executed in result.executed:
        counts.update(executed.run.counts())
    bad = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()) if v and k not in _FINE)
    return bad or f"exit {result.exit_code}"


def pending(result: Result) -> list[str]:
    """Objects moved whose ports were not ACTIVE by the timeout."""
    results = (r for e in result.executed for r in e.run.results)
    return sorted({r.object_id for r in results if r.outcome.value == "pending"})


class Participant:
    """One kind of agent of a host, drained and restored (see the module docstring)."""

    def __init__(self, side: Side) -> None:
        self.side = side
        self.traits = side.traits
        self.name = side.traits.name
        self.unit = side.traits.unit
        self.noun = side.traits.unit[:-1]  # one of what it moves: "router", "network"
        self._ids: dict[str, str] = {}  # host -> agent id, once looked up

    def _moved(self, result: Result, *, source: str = "", target: str = "") -> list[str]:
        """Objects the action took off agent ``source`` or onto agent ``target``."""
        return sorted(
            {
                r.object_id
                for e in result.executed
                for r in e.run.results
                if r.outcome.value in _ARRIVED
                and self.side.leaves(r)
                and (not source or r.move.source == source)
                and (not target or r.target == target)
            }
        )

    def _where(self, host: str) -> str:
        return f"the {self.traits.prefix}agent of {host}" if self.traits.prefix else host

    def read_agent(self, run: RunContext, host: str) -> Agent:
        if host not in self._ids:
            self._ids[host] = self.side.find_agent(run, host).id
        return self.side.get_agent(run, self._ids[host])

    def drain(self, run: RunContext, host: str) -> StepResult:
        side = self.side
        agent = side.find_agent(run, host)
        result = side.drain(run, agent)
        moved = self._moved(result, source=agent.id)
        detail = {"agent": agent.id, "started_at": agent.started_at, "moved_out": moved}
        if result.exit_code != 0:
            why = problem(result)
            return StepResult(
                False, f"{self.traits.prefix}drain of {host} did not finish: {why}", detail
            )
        waiting = pending(result)
        if waiting:
            return StepResult(
                False,
                f"{len(waiting)} {self.noun}(s) moved off {host} have {self.traits.ports} not "
                f"ACTIVE yet: {', '.join(waiting[:5])}",
                {**detail, "pending": waiting},
            )
        left = side.on_agent(run, agent.id)
        if left:
            where = self._where(host)
            return StepResult(
                False, f"{len(left)} {self.noun}(s) still on {where} after the drain", detail
            )
        return StepResult(True, "", detail)

    def canary(self, run: RunContext, host: str, drained: dict[str, Any]) -> StepResult:
        side, noun = self.side, self.noun
        agent = side.find_agent(run, host)
        chosen = side.pick_canary(run, list(drained.get("moved_out", [])))
        if chosen is None and self.traits.canary_required:
            return StepResult(False, f"no {noun} can serve as the canary for {host}")
        enable = AgentChange(
            agent.id,
            host,
            f"rolling: {self.traits.prefix}canary",
            admin_state_up=True,
            description=CANARY_MARK,
        )
        enabled = side.change_agent(run, enable, agent)
        if not enabled.ok:
            return StepResult(
                False, f"{self.traits.prefix}agent on {host} could not be enabled: {enabled.detail}"
            )
        if chosen is None:
            return StepResult(True, f"no {noun} to return as the canary", {"moved_back": 0})
        return self._move_canary(run, agent, chosen)

    def _move_canary(self, run: RunContext, agent: Agent, chosen: str) -> StepResult:
        """The canary onto the enabled agent, ready within the timeout, answering if watched."""
        noun, host = self.noun, agent.host
        started = time.monotonic()
        timeout = run.request.canary_timeout
        execution = replace(run.request.execution, wait_ports=True, port_timeout=timeout)
        detail: dict[str, Any] = {noun: chosen}
        try:
            result = self.side.move_onto(run, agent, (chosen,), execution)
        except L3haError as exc:
            return StepResult(
                False, f"canary {noun} {chosen} could not move to {host}: {exc}", detail
            )
        if result.exit_code != 0 or pending(result):
            why = f"{self.traits.ports} not ACTIVE" if pending(result) else problem(result)
            return StepResult(
                False, f"canary {noun} {chosen} on {host}: {why} within {timeout:g} s", detail
            )
        if chosen not in self.side.on_agent(run, agent.id):
            return StepResult(False, f"canary {noun} {chosen} is not on {host}", detail)
        return self._canary_answers(run, host, chosen, started, detail)

    def _canary_answers(
        self, run: RunContext, host: str, chosen: str, since: float, detail: dict[str, Any]
    ) -> StepResult:
        """With the guard watching the canary's address: it must answer, within the timeout.
        (The guard watches routers' addresses; any other object passes here.)"""
        guard, noun = run.guard, self.noun
        if guard is None or guard.router_answered_since(chosen, since) is None:
            return StepResult(True, "", {**detail, "moved_back": 1})
        moved_at = time.monotonic()
        deadline = since + run.request.canary_timeout
        while not guard.router_answered_since(chosen, moved_at):
            if time.monotonic() > deadline:
                return StepResult(
                    False,
                    f"canary {noun} {chosen} has ports ACTIVE on {host} but its data-plane "
                    f"address does not answer (the probe saw no reply within "
                    f"{run.request.canary_timeout:g} s): the host's data plane is broken",
                    {**detail, "dataplane": "no answer"},
                )
            time.sleep(DATAPLANE_POLL)
        return StepResult(True, "", {**detail, "dataplane": "answers", "moved_back": 1})

    def restore(self, run: RunContext, host: str, drained: dict[str, Any]) -> StepResult:
        side = self.side
        undrained = side.undrain(run, host)
        if undrained.exit_code != 0:
            return StepResult(
                False, f"{self.traits.prefix}undrain of {host} failed: {problem(undrained)}"
            )
        if not self.traits.returns_on_restore:
            return StepResult(True)
        agent = side.find_agent(run, host)
        objects = tuple(drained.get("moved_out", []))
        if not objects or not agent.usable:
            return StepResult(True, "", {"moved_back": 0})
        result = side.move_onto(run, agent, objects, run.request.execution)
        detail = {"moved_back": len(self._moved(result, target=agent.id))}
        if result.exit_code != 0:
            return StepResult(
                False, f"{self.traits.unit} could not return to {host}: {problem(result)}", detail
            )
        return StepResult(True, "", detail)

    def keep_drained(self, run: RunContext, host: str) -> StepResult:
        """After a failure: anything on the agent (the canary) moves away, and it is
        disabled again (a drain; nothing moves when nothing is there)."""
        try:
            agent = self.side.find_agent(run, host)
            if not agent.admin_state_up and not self.side.on_agent(run, agent.id):
                return StepResult(True, "already drained")
            return self.drain(run, host)
        except L3haError as exc:
            return StepResult(False, f"could not keep {self._where(host)} drained: {exc}")
