"""The host's OVN gateway chassis as a rolling participant's side (ML2/OVN). I/O: cloud,
journal (via the OVN gateway operations).

On ML2/OVN a network node has no L3 agent: its routers' gateways live on its gateway
chassis. Drain is ``l3ha drain CHASSIS`` (``l3ha.operations.ovn.evacuate_or_drain``): each router
whose primary the chassis is moves gracefully (another chassis raised above it, canary
first, read back), then the chassis goes to the bottom of every group and is marked
drained in l3ha's journal, so that when the upgrade kills and restarts it no router
fails back to it. Stable is the gateway agent's heartbeat (``nb_cfg`` acknowledged)
observed alive for ``--stable-for``, as for the other agents. Neutron refuses to
disable an OVN agent, so the canary step only checks the chassis is there (no write,
no canary object); restore is ``l3ha undrain CHASSIS --rebalance``
(``l3ha.operations.ovn_rebalance.undrain``): the chassis eligible again and primaries
moved back by the rebalance, canary first, each router at most once.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from l3ha.cloud.ovn import NeutronOvn
from l3ha.errors import L3haError
from l3ha.executor import AgentChange, AgentChangeResult, ExecutorOptions
from l3ha.executor.agents import AgentChangeOutcome
from l3ha.executor.gateway_outcome import GatewayMoveResult
from l3ha.model import Agent
from l3ha.operations.ovn import (
    GatewayAction,
    GatewayContext,
    GatewayRequest,
    GatewayResult,
    evacuate_or_drain,
)
from l3ha.operations.ovn_rebalance import RebalanceRequest, undrain
from l3ha.operations.rolling.participants import ROLLING_JOURNAL_ARGS, RunContext, SideTraits
from l3ha.ovn_model import resolve_chassis
from l3ha.planner.gateway import GatewayMoveKind


class GatewaySide:
    """The gateway chassis and the routers it is primary for (see the module docstring)."""

    traits = SideTraits("gateway", "routers", "gateway ", "its gateway")

    def __init__(self, ovn: NeutronOvn) -> None:
        self.ovn = ovn

    def _context(self, run: RunContext) -> GatewayContext:
        ops = run.ops
        return GatewayContext(self.ovn, ops.journal, ops.clock, ops.notify,
                              should_stop=ops.should_stop)  # fmt: skip

    def present(self, run: RunContext, host: str) -> bool:
        return any(c.host == host for c in self.ovn.list_chassis())

    def find_agent(self, run: RunContext, host: str) -> Agent:
        return resolve_chassis(tuple(self.ovn.list_chassis()), host)

    def get_agent(self, run: RunContext, agent_id: str) -> Agent:
        return resolve_chassis(tuple(self.ovn.list_chassis()), agent_id)

    def on_agent(self, run: RunContext, agent_id: str) -> Collection[str]:
        """The routers whose primary the chassis is (it stays, lowest, in their groups)."""
        return set(self.ovn.read_ovn_snapshot().primaries_of(agent_id))

    def would_move(self, run: RunContext, host: str) -> int:
        world = self.ovn.read_ovn_snapshot()
        return len(world.primaries_of(world.find_chassis(host).id))

    def leaves(self, result: GatewayMoveResult) -> bool:
        return result.move.kind is GatewayMoveKind.PROMOTE

    def drain(self, run: RunContext, agent: Agent) -> GatewayResult:
        request = GatewayRequest(GatewayAction.DRAIN, agent.id, execution=run.request.execution,
                                 journal_args=ROLLING_JOURNAL_ARGS)  # fmt: skip
        return evacuate_or_drain(self._context(run), request)

    def undrain(self, run: RunContext, host: str) -> GatewayResult:
        req = run.request
        request = RebalanceRequest(weights=req.weights, execution=req.execution,
                                   journal_args=ROLLING_JOURNAL_ARGS)  # fmt: skip
        return undrain(self._context(run), host, request, then_rebalance=True)

    def change_agent(self, run: RunContext, change: AgentChange, agent: Agent) -> AgentChangeResult:
        """Neutron refuses to disable or enable an OVN agent: nothing to write; the chassis
        must still be listed (and alive) for the canary step to pass."""
        try:
            chassis = self.get_agent(run, agent.id)
        except L3haError as exc:
            return AgentChangeResult(change, AgentChangeOutcome.FAILED, str(exc))
        if not chassis.alive:
            return AgentChangeResult(change, AgentChangeOutcome.FAILED, "the chassis is dead")
        return AgentChangeResult(change, AgentChangeOutcome.UNCHANGED, "nothing to write on OVN")

    def pick_canary(self, run: RunContext, drained: list[str]) -> str | None:
        return None  # the undrain's rebalance moves its first router alone: the canary

    def move_onto(
        self, run: RunContext, agent: Agent, objects: Sequence[str], execution: ExecutorOptions
    ) -> Any:
        raise L3haError("nothing moves onto a gateway chassis but by the rebalance of its undrain")
