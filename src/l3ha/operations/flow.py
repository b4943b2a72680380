"""The one flow of a planned action of every kind: recover, observe, gate and plan, execute,
verify. I/O: through the ``FlowSide`` it is given (cloud reads, journal, executor runs).

A kind's evacuate, repair, return, migrate ... (and the first pass of its drain) hand
``run_flow`` the kind's side and what the action adds: ``plan_on``, its gates (which
raise ``SafetyHaltError`` before anything is written) and its planner, and ``verify``,
which reads the cloud again after a real run and names the problems left.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

SnapT = TypeVar("SnapT")
PlanT = TypeVar("PlanT")
StepT = TypeVar("StepT")
Plan_contra = TypeVar("Plan_contra", contravariant=True)
Step_co = TypeVar("Step_co", covariant=True)


class FlowSide(Protocol[SnapT, Plan_contra, Step_co]):
    """What one kind supplies to the flow: finish what a crash or a stop interrupted (False
    when that went wrong), the world to plan on, a plan handed to its executor (within
    the move budget; dry run there)."""

    def recover(self) -> bool: ...
    def observe(self) -> SnapT: ...
    def execute(self, snapshot: SnapT, plan: Plan_contra) -> Step_co: ...


def run_flow(
    side: FlowSide[SnapT, PlanT, StepT],
    plan_on: Callable[[SnapT], PlanT],
    verify: Callable[[StepT], tuple[str, ...]] | None = None,
    *,
    dry_run: bool,
) -> tuple[StepT, tuple[str, ...], bool]:
    """Recover, observe, gate and plan (``plan_on``), execute, verify (not after a dry run,
    which changed nothing): the step, the problems, whether the recovery went well."""
    recovered_ok = side.recover()
    snapshot = side.observe()
    step = side.execute(snapshot, plan_on(snapshot))
    return step, () if dry_run or verify is None else verify(step), recovered_ok
