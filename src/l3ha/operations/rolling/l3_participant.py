"""The host's L3 agent as a rolling participant's side. I/O: cloud, journal (via the operations).

Everything goes through the operations layer (drain, migrate, undrain: every
write through the executor, journalled, read back). Drain moves the legacy
routers away and replaces the HA replicas, waiting for the moved routers'
ports to be ACTIVE, then disables the agent. The canary router is migrated
onto the re-enabled agent (``pick_canary``); restore is the undrain (the
final ``--rebalance-after`` evens the load, nothing is moved back here).
Every host of the run has an L3 agent (checked before it starts).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Any

from l3ha.executor import AgentChange, AgentChangeResult, ExecutorOptions, MoveResult
from l3ha.model import Agent, MoveKind, Snapshot
from l3ha.operations import Action, ActionRequest, ActionResult, make_plan, run_action
from l3ha.operations.rolling.participants import ROLLING_JOURNAL_ARGS, RunContext, SideTraits


class L3Side:
    """The L3 agent and its routers (see the module docstring)."""

    traits = SideTraits("l3", "routers", "", "ports", canary_required=True)

    def _request(self, run: RunContext, action: Action, **changes: Any) -> ActionRequest:
        req = run.request
        base = ActionRequest(
            action=action,
            weights=req.weights,
            execution=req.execution,
            placement=req.placement,
            journal_args=ROLLING_JOURNAL_ARGS,
        )
        return replace(base, **changes)

    def present(self, run: RunContext, host: str) -> bool:
        return True  # the run's hosts are L3 agents' hosts (checked before it starts)

    def find_agent(self, run: RunContext, host: str) -> Agent:
        return run.ops.observe().find_agent(host)

    def get_agent(self, run: RunContext, agent_id: str) -> Agent:
        return run.ops.cloud.get_agent(agent_id)

    def on_agent(self, run: RunContext, agent_id: str) -> Collection[str]:
        return {b.router_id for b in run.ops.cloud.routers_on_agent(agent_id)}

    def would_move(self, run: RunContext, host: str) -> int:
        snapshot = run.ops.observe()
        agent = snapshot.find_agent(host)
        plan = make_plan(self._request(run, Action.DRAIN, agent=host), snapshot)
        return len({m.router_id for m in plan.moves if m.source == agent.id})

    def leaves(self, result: MoveResult) -> bool:
        return result.move.kind in (MoveKind.MOVE, MoveKind.REMOVE_REPLICA)

    def drain(self, run: RunContext, agent: Agent) -> ActionResult:
        return run_action(run.ops, self._request(run, Action.DRAIN, agent=agent.host))

    def undrain(self, run: RunContext, host: str) -> ActionResult:
        return run_action(run.ops, self._request(run, Action.UNDRAIN, agent=host))

    def change_agent(self, run: RunContext, change: AgentChange, agent: Agent) -> AgentChangeResult:
        return run.ops.executor(run.request.execution).change_agent(change, agent)

    def pick_canary(self, run: RunContext, drained: list[str]) -> str | None:
        return pick_canary(run.ops.observe(), run.request.canary, drained)

    def move_onto(
        self, run: RunContext, agent: Agent, objects: Sequence[str], execution: ExecutorOptions
    ) -> ActionResult:
        placement = replace(run.request.placement, to=(agent.id,))
        migrate = self._request(
            run, Action.MIGRATE, routers=tuple(objects), execution=execution, placement=placement
        )
        return run_action(run.ops, migrate)


def pick_canary(snapshot: Snapshot, named: str | None, drained: list[str]) -> str | None:
    """The canary router: the one named, else the first (by id) legacy router among
    those drained from the host, else the first hosted legacy router anywhere."""
    if named:
        return snapshot.find_router(named).id
    hosted = {b.router_id for b in snapshot.bindings}
    legacy = sorted(
        r.id for r in snapshot.routers if not r.ha and not r.distributed and r.id in hosted
    )
    from_host = [r for r in legacy if r in set(drained)]
    pool = from_host or legacy
    return pool[0] if pool else None
