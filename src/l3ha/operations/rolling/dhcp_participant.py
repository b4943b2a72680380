"""The host's DHCP agent as a rolling participant's side. I/O: cloud, journal (via the DHCP
operations).

Everything goes through the DHCP operations layer (``l3ha.operations.dhcp``:
make before break, every write through the DHCP executor, journalled, read
back). Drain moves each network to another live agent (its DHCP port there
ACTIVE before the copy on the host goes), then disables the agent. The
canary returns one network drained from the host (else any network served
elsewhere) to the re-enabled agent; restore clears the mark and returns the
rest of the host's networks, so every host serves what it served before.
A host without a DHCP agent has no DHCP steps (``present``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from l3ha.cloud.dhcp_base import DhcpCloud
from l3ha.errors import L3haError
from l3ha.executor import AgentChange, AgentChangeResult, ExecutorOptions
from l3ha.executor.dhcp import DhcpExecutor
from l3ha.model import Agent
from l3ha.operations.dhcp import DhcpContext, DhcpResult, run_dhcp_action
from l3ha.operations.request import DhcpAction, DhcpRequest
from l3ha.operations.rolling.participants import ROLLING_JOURNAL_ARGS, RunContext, SideTraits


class DhcpSide:
    """The DHCP agent and its networks (see the module docstring)."""

    traits = SideTraits("dhcp", "networks", "DHCP ", "its DHCP port", returns_on_restore=True)

    def __init__(self, cloud: DhcpCloud) -> None:
        self.cloud = cloud

    def _run(self, run: RunContext, action: DhcpAction, **fields: Any) -> DhcpResult:
        ctx = DhcpContext(self.cloud, run.ops.journal, run.ops.clock, run.ops.notify)
        fields.setdefault("execution", run.request.execution)
        request = DhcpRequest(action=action, journal_args=ROLLING_JOURNAL_ARGS, **fields)
        return run_dhcp_action(ctx, request)

    def present(self, run: RunContext, host: str) -> bool:
        return any(a.host == host for a in self.cloud.list_dhcp_agents())

    def find_agent(self, run: RunContext, host: str) -> Agent:
        return self.cloud.read_dhcp_snapshot().find_agent(host)

    def get_agent(self, run: RunContext, agent_id: str) -> Agent:
        for agent in self.cloud.list_dhcp_agents():
            if agent.id == agent_id:
                return agent
        raise L3haError(f"the DHCP agent {agent_id} is gone")

    def on_agent(self, run: RunContext, agent_id: str) -> Collection[str]:
        return self.cloud.read_dhcp_snapshot().networks_of_agent(agent_id)

    def would_move(self, run: RunContext, host: str) -> int:
        return len(self.on_agent(run, self.find_agent(run, host).id))

    def leaves(self, result: Any) -> bool:
        return True  # a DHCP move takes the network off its source (make before break)

    def drain(self, run: RunContext, agent: Agent) -> DhcpResult:
        return self._run(run, DhcpAction.DRAIN, agent=agent.id)

    def undrain(self, run: RunContext, host: str) -> DhcpResult:
        return self._run(run, DhcpAction.UNDRAIN, agent=host)

    def change_agent(self, run: RunContext, change: AgentChange, agent: Agent) -> AgentChangeResult:
        ops = run.ops
        return DhcpExecutor(self.cloud, ops.journal, ops.clock).change_agent(change, agent)

    def pick_canary(self, run: RunContext, drained: list[str]) -> str | None:
        snapshot = self.cloud.read_dhcp_snapshot()
        served = sorted(n.id for n in snapshot.networks if snapshot.serving_agents(n.id))
        pool = [n for n in drained if n in set(served)] or served
        return pool[0] if pool else None

    def move_onto(
        self, run: RunContext, agent: Agent, objects: Sequence[str], execution: ExecutorOptions
    ) -> DhcpResult:
        return self._run(
            run, DhcpAction.RETURN, agent=agent.id, networks=tuple(objects), execution=execution
        )
