"""What an operation is asked to do, and what it reports back. Pure.

An ``ActionRequest`` carries everything a command line, the watch daemon or
rolling maintenance decides before an action runs: which action, on which
agent or routers, where routers may go, how the executor runs (dry run
included) and whether the safety gates may be overridden. An
``ActionResult`` is the ordered list of what happened (plans executed,
agent changes made) and the exit code the command line uses. ``DhcpAction`` and
``DhcpRequest`` are the same for DHCP agents and their networks. The daemon's
decisions name these actions without importing the operations that run them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from l3ha.dhcp_model import DEFAULT_AGENTS_PER_NETWORK
from l3ha.executor.options import ExecutorOptions
from l3ha.executor.outcome import PlanRun, RunResult
from l3ha.model import Plan, Snapshot
from l3ha.weights import WeightPolicy

if TYPE_CHECKING:  # the agent changer does I/O; only its result's type is needed here
    from l3ha.executor.agents import AgentChangeResult


class Action(StrEnum):
    """Every action l3ha can take on the cloud."""

    EVACUATE = "evacuate"
    DRAIN = "drain"
    UNDRAIN = "undrain"
    MIGRATE = "migrate"
    REBALANCE = "rebalance"
    REPAIR = "repair"
    HA_REPAIR = "ha-repair"


class DhcpAction(StrEnum):
    """The DHCP actions."""

    EVACUATE = "dhcp-evacuate"
    DRAIN = "dhcp-drain"
    UNDRAIN = "dhcp-undrain"
    REPAIR = "dhcp-repair"
    RETURN = "dhcp-return"


#: Actions ``l3ha plan`` can plan offline.
PLANNABLE = (Action.EVACUATE, Action.DRAIN, Action.MIGRATE, Action.REBALANCE, Action.REPAIR)

#: The description l3ha gives an agent it drained (undrain clears only this mark).
DRAIN_MARK = "l3ha: drained"


class Executes:
    """A request of any kind: its ``execution`` says, among the rest, whether it is a dry run."""

    execution: ExecutorOptions

    @property
    def dry_run(self) -> bool:
        return self.execution.dry_run


@dataclass(frozen=True)
class PlacementRequest:
    """Where routers may go; ``to`` names agents by host or id (resolved on the snapshot)."""

    to: tuple[str, ...] = ()
    max_routers_per_agent: int | None = None
    max_weight_per_agent: int | None = None
    strict_az: bool = False


@dataclass(frozen=True)
class ActionRequest(Executes):
    """One action and its options.

    ``agent``: the agent of evacuate, drain and undrain (host or id).
    ``routers``: router ids or names (evacuate: a subset; migrate: required);
    ``skip_unknown`` moves the known ones when some are unknown.
    ``force``: act although the fleet gate (many agents dead at once) or, for
    evacuate, a live and enabled source would refuse. ``max_moves``: cap of
    rebalance (and of the rebalance after undrain with ``rebalance_after``).
    ``journal_args``: extra facts recorded with the operation (who asked).
    ``move_budget``: at most this many moves now (the daemon's rate budget);
    the rest of the plan is left for a later call.
    """

    action: Action
    weights: WeightPolicy = field(default_factory=WeightPolicy)
    execution: ExecutorOptions = field(default_factory=ExecutorOptions)
    placement: PlacementRequest = field(default_factory=PlacementRequest)
    agent: str | None = None
    routers: tuple[str, ...] = ()
    skip_unknown: bool = False
    force: bool = False
    max_moves: int | None = None
    rebalance_after: bool = False
    journal_args: tuple[tuple[str, str], ...] = ()
    move_budget: int | None = None


#: Outcomes (of every kind) of a move that wrote nothing.
_NOT_STARTED = frozenset({"skipped", "planned"})


class _Plan(Protocol):
    @property
    def unplaceable(self) -> Sequence[object]: ...


P = TypeVar("P", bound=_Plan)
S = TypeVar("S")
R = TypeVar("R", bound="PlanRun[Any, Any]")
A = TypeVar("A", bound=StrEnum)
E = TypeVar("E", bound="PlanExecuted[Any, Any, Any]")


@dataclass(frozen=True)
class PlanExecuted(Generic[P, S, R]):
    """A plan made on ``snapshot`` and what the executor did with it (dry run: PLANNED),
    for every kind of placement."""

    plan: P
    snapshot: S
    run: R

    @property
    def exit_code(self) -> int:
        """1 when a move failed or an object could not be placed; a dry run, whose moves are
        only planned, ends as the real run would for the objects it cannot place."""
        if self.run.dry_run:
            return 1 if self.plan.unplaceable else 0
        return max(self.run.exit_code, 1 if self.plan.unplaceable else 0)


class Executed(PlanExecuted[Plan, Snapshot, RunResult]):
    """A router plan and its run."""


@dataclass(frozen=True)
class AgentChanged:
    """An agent change (drain's disable, undrain's enable) and its outcome."""

    result: AgentChangeResult

    @property
    def exit_code(self) -> int:
        return 0 if self.result.ok else 1


Step = Executed | AgentChanged


@dataclass(frozen=True)
class OperationResult(Generic[A, E]):
    """Everything one action did, in order (plans run, agent changes), and its exit code,
    for every kind of placement.

    Exit codes: 0 all done, 1 some moves failed, an object is unhosted or
    unplaced, or the action could not finish (``problems`` says why).
    """

    action: A
    steps: tuple[E | AgentChanged, ...] = ()
    problems: tuple[str, ...] = ()
    recovered_ok: bool = True
    follow_up_code: int = 0

    @property
    def exit_code(self) -> int:
        codes = [s.exit_code for s in self.steps] + [self.follow_up_code]
        if self.problems or not self.recovered_ok:
            codes.append(1)
        return max(codes, default=0)

    @property
    def executed(self) -> tuple[E, ...]:
        """The plans run, in order."""
        return tuple(s for s in self.steps if not isinstance(s, AgentChanged))

    @property
    def moves_started(self) -> int:
        """Moves that began to write (not skipped, not only planned): what a budget counts."""
        return sum(
            r.outcome.value not in _NOT_STARTED for e in self.executed for r in e.run.results
        )

    @property
    def changes(self) -> tuple[AgentChangeResult, ...]:
        """The agent changes made, in order."""
        return tuple(s.result for s in self.steps if isinstance(s, AgentChanged))


class ActionResult(OperationResult[Action, Executed]):
    """What one router action did."""

    @property
    def runs(self) -> tuple[RunResult, ...]:
        return tuple(e.run for e in self.executed)


@dataclass(frozen=True)
class DhcpRequest(Executes):
    """One DHCP action and its options (``to``: agents by host or id; ``force``: past the
    fleet gate and, for evacuate, a live source; ``networks``: what ``return`` brings
    back to ``agent``)."""

    action: DhcpAction
    agent: str | None = None
    to: tuple[str, ...] = ()
    agents_per_network: int = DEFAULT_AGENTS_PER_NETWORK
    trim: bool = False
    force: bool = False
    execution: ExecutorOptions = field(default_factory=ExecutorOptions)
    move_budget: int | None = None
    networks: tuple[str, ...] = ()
    journal_args: tuple[tuple[str, str], ...] = ()
