"""The one drain flow for every kind: move off, repeat while objects arrive, disable, sweep.

I/O: through the ``DrainSide`` it is given (cloud reads, executor runs, the agent
change). ``run_drain`` runs a kind's first pass (gates and all) through the flow every
kind shares (``l3ha.operations.flow``), then the rest: in a dry run, say what the real
run would do; else repeat the pass while objects keep arriving (at most
``DRAIN_PASSES`` passes), leave the agent enabled if anything is still on it (a
disabled agent tears its objects down), disable it, and move whatever the scheduler
put on it meanwhile.
The side supplies what differs: its passes, its reads, its agent change and the
words of its notices.
"""

from __future__ import annotations

from collections.abc import Callable, Sized
from dataclasses import dataclass
from typing import Generic, NamedTuple, Protocol, TypeVar

from l3ha.executor import AgentChange, AgentChangeResult
from l3ha.model import Agent
from l3ha.operations.context import Notify, drain_change
from l3ha.operations.flow import FlowSide, run_flow
from l3ha.operations.request import AgentChanged

#: Passes a drain makes over an agent before disabling it, while objects keep arriving.
DRAIN_PASSES = 3


class _Snapshot(Protocol):
    @property
    def observed_at(self) -> str: ...
    def find_agent(self, ref: str) -> Agent: ...


class _Step(Protocol):
    @property
    def exit_code(self) -> int: ...
    @property
    def snapshot(self) -> _Snapshot: ...


StepT = TypeVar("StepT", bound=_Step)
SnapT = TypeVar("SnapT")
Plan_contra = TypeVar("Plan_contra", contravariant=True)


class DrainWords(NamedTuple):
    """How a kind's drain notices name the agent ("agent", "DHCP agent") and its objects
    ("router"), the notices (with ``{count}`` and ``{host}``) for objects that arrive
    while it drains and that land after it is disabled, and why the agent is disabled."""

    agent: str
    noun: str
    arrived: str
    landed: str
    disabled: str


class DrainSide(FlowSide[SnapT, Plan_contra, StepT], Protocol[StepT, SnapT, Plan_contra]):
    """What one kind supplies to the drain flow (besides its ``FlowSide``)."""

    @property
    def words(self) -> DrainWords: ...

    def on_agent(self, snapshot: SnapT, agent_id: str) -> Sized: ...
    def left_on(self, agent: Agent) -> Sized: ...
    def drain_pass(self, snapshot: SnapT) -> StepT: ...
    def change_agent(self, change: AgentChange, agent: Agent) -> AgentChangeResult: ...
    def stranded(self, step: StepT) -> int | None: ...
    def unfinished(self, last: StepT, agent: Agent, left: Sized) -> tuple[str, ...]: ...


@dataclass
class DrainOutcome(Generic[StepT]):
    """The steps a drain took, in order, and the problems that keep it from being done."""

    steps: list[StepT | AgentChanged]
    problems: tuple[str, ...] = ()


def run_drain(
    side: DrainSide[StepT, SnapT, Plan_contra],
    plan_on: Callable[[SnapT], Plan_contra],
    notify: Notify,
    agent_ref: str,
    *,
    dry_run: bool,
) -> DrainOutcome[StepT]:
    """The drain of the agent ``agent_ref``: its first pass (``plan_on`` gates and plans),
    then everything after it (see the module docstring)."""
    first = run_flow(side, plan_on, dry_run=dry_run)[0]
    agent = first.snapshot.find_agent(agent_ref)
    change = drain_change(agent, first.snapshot.observed_at, side.words.disabled)
    done = DrainOutcome[StepT]([first])
    if dry_run:
        stranded = side.stranded(first)
        if stranded is not None:  # as the real run would: the agent stays enabled
            notify(
                f"{side.words.agent} {agent.host} would be left enabled: {stranded} "
                f"{side.words.noun}(s) could not be placed and would stay on it"
            )
            done.problems = ("agent left enabled",)
        else:
            done.steps.append(AgentChanged(side.change_agent(change, agent)))
        return done
    last, left = _repeat_while_arriving(side, notify, agent, first, done)
    done.problems = side.unfinished(last, agent, left)
    if done.problems:
        return done
    disabled = side.change_agent(change, agent)
    done.steps.append(AgentChanged(disabled))
    if not disabled.ok:
        notify(f"{side.words.agent} {agent.host} could not be disabled: {disabled.detail}")
        return done
    notify(f"{side.words.agent} {agent.host} disabled")
    snapshot = side.observe()
    late = side.on_agent(snapshot, agent.id)
    if late:
        notify(side.words.landed.format(count=len(late), host=agent.host))
        done.steps.append(side.drain_pass(snapshot))
    return done


def _repeat_while_arriving(
    side: DrainSide[StepT, SnapT, Plan_contra],
    notify: Notify,
    agent: Agent,
    last: StepT,
    done: DrainOutcome[StepT],
) -> tuple[StepT, Sized]:
    """Repeat the first pass while objects arrive on the agent (the scheduler, a crash's
    recovery), at most ``DRAIN_PASSES`` passes; the last pass and what is left."""
    left = side.left_on(agent)
    for _ in range(DRAIN_PASSES - 1):
        if last.exit_code != 0 or not left:
            break
        notify(side.words.arrived.format(count=len(left), host=agent.host))
        last = side.drain_pass(side.observe())
        done.steps.append(last)
        left = side.left_on(agent)
    return last, left
