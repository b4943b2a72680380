"""The host's DHCP agent as a rolling participant. I/O: cloud, journal (via the DHCP layer).

Everything goes through the DHCP operations layer (``l3ha.operations.dhcp``:
make before break, every write through the DHCP executor, journalled, read
back). Drain moves each network to another live agent (its DHCP port there
ACTIVE before the copy on the host goes), then disables the agent. The
stable step watches its heartbeat like the L3 agent's. The canary enables
it again (keeping l3ha's drain mark) and returns one network drained from
the host (else any network served elsewhere) to it, requiring its DHCP port
ACTIVE within ``--canary-timeout``. Restore clears the mark and returns the
rest of the host's networks, so every host serves what it served before.
A host without a DHCP agent has no DHCP steps (``present``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from l3ha.cloud.dhcp_base import DhcpCloud
from l3ha.dhcp_model import usable
from l3ha.errors import L3haError
from l3ha.executor import AgentChange
from l3ha.executor.dhcp import DhcpOutcome
from l3ha.executor.dhcp_steps import change_dhcp_agent
from l3ha.model import Agent
from l3ha.operations.dhcp import DhcpContext, DhcpResult, run_dhcp_action
from l3ha.operations.request import DhcpAction, DhcpRequest
from l3ha.operations.rolling.participants import CANARY_MARK, RunContext, StepResult

#: Outcomes by which a network left (or came to) an agent.
_MOVED = (DhcpOutcome.MOVED, DhcpOutcome.REMOVED, DhcpOutcome.PENDING)


def _problem(result: DhcpResult) -> str:
    if result.problems:
        return "; ".join(result.problems)
    failed = [c for c in result.changes if not c.ok]
    if failed:
        return f"agent change failed: {failed[0].detail}"
    bad = [r for e in result.executed for r in e.run.results if r.outcome is DhcpOutcome.FAILED]
    if bad:
        return f"{len(bad)} network move(s) failed: {bad[0].reason}"
    return f"exit {result.exit_code}"


def _moved(
    result: DhcpResult, *, source: str | None = None, target: str | None = None
) -> list[str]:
    return sorted(
        {
            r.move.network_id
            for e in result.executed
            for r in e.run.results
            if r.outcome in _MOVED
            and (source is None or r.move.source == source)
            and (target is None or r.target == target)
        }
    )


class DhcpParticipant:
    """The host's DHCP agent (see the module docstring)."""

    name = "dhcp"
    unit = "networks"

    def __init__(self, cloud: DhcpCloud) -> None:
        self.cloud = cloud
        self._ids: dict[str, str] = {}  # host -> agent id, once looked up

    def _ctx(self, run: RunContext) -> DhcpContext:
        return DhcpContext(self.cloud, run.ops.journal, run.ops.clock, run.ops.notify)

    def _request(self, run: RunContext, action: DhcpAction, **changes: Any) -> DhcpRequest:
        base = DhcpRequest(
            action=action, execution=run.request.execution, journal_args=(("rolling", "yes"),)
        )
        return replace(base, **changes)

    def _agent(self, host: str) -> Agent:
        return self.cloud.read_dhcp_snapshot().find_agent(host)

    def present(self, run: RunContext, host: str) -> bool:
        return any(a.host == host for a in self.cloud.list_dhcp_agents())

    def would_move(self, run: RunContext, host: str) -> int:
        snapshot = self.cloud.read_dhcp_snapshot()
        return len(snapshot.networks_of_agent(snapshot.find_agent(host).id))

    def read_agent(self, run: RunContext, host: str) -> Agent:
        if host not in self._ids:
            self._ids[host] = self._agent(host).id
        for agent in self.cloud.list_dhcp_agents():
            if agent.id == self._ids[host]:
                return agent
        raise L3haError(f"the DHCP agent on {host} is gone")

    def drain(self, run: RunContext, host: str) -> StepResult:
        agent = self._agent(host)
        result = run_dhcp_action(
            self._ctx(run), self._request(run, DhcpAction.DRAIN, agent=agent.id)
        )
        moved = _moved(result, source=agent.id)
        detail = {"agent": agent.id, "started_at": agent.started_at, "moved_out": moved}
        if result.exit_code != 0:
            return StepResult(
                False, f"DHCP drain of {host} did not finish: {_problem(result)}", detail
            )
        left = self.cloud.read_dhcp_snapshot().networks_of_agent(agent.id)
        if left:
            return StepResult(
                False, f"{len(left)} network(s) still on the DHCP agent of {host}", detail
            )
        return StepResult(True, "", detail)

    def canary(self, run: RunContext, host: str, drained: dict[str, Any]) -> StepResult:
        snapshot = self.cloud.read_dhcp_snapshot()
        agent = snapshot.find_agent(host)
        served = [n.id for n in snapshot.networks if snapshot.serving_agents(n.id)]
        from_host = [n for n in drained.get("moved_out", []) if n in set(served)]
        pool = from_host or sorted(served)
        enable = AgentChange(
            agent.id, host, "rolling: DHCP canary", admin_state_up=True, description=CANARY_MARK
        )
        enabled = change_dhcp_agent(
            self.cloud, run.ops.journal, run.ops.clock, enable, dry_run=False, current=agent
        )
        if not enabled.ok:
            return StepResult(False, f"DHCP agent on {host} could not be enabled: {enabled.detail}")
        if not pool:
            return StepResult(True, "no network to return as the canary", {"moved_back": 0})
        network = pool[0]
        timeout = run.request.canary_timeout
        execution = replace(run.request.execution, wait_ports=True, port_timeout=timeout)
        request = self._request(
            run, DhcpAction.RETURN, agent=agent.id, networks=(network,), execution=execution
        )
        detail: dict[str, Any] = {"network": network}
        result = run_dhcp_action(self._ctx(run), request)
        if result.exit_code != 0 or _moved(result, target=agent.id) != [network]:
            return StepResult(
                False, f"canary network {network} on {host}: {_problem(result)}", detail
            )
        pending = [
            r for e in result.executed for r in e.run.results if r.outcome is DhcpOutcome.PENDING
        ]
        if pending:
            return StepResult(
                False,
                f"canary network {network}: its DHCP port on {host} is not ACTIVE within "
                f"{timeout:g} s",
                detail,
            )
        if agent.id not in {a.id for a in self.cloud.dhcp_agents_of_network(network)}:
            return StepResult(False, f"canary network {network} is not on {host}", detail)
        return StepResult(True, "", {**detail, "moved_back": 1})

    def restore(self, run: RunContext, host: str, drained: dict[str, Any]) -> StepResult:
        ctx = self._ctx(run)
        undrained = run_dhcp_action(ctx, self._request(run, DhcpAction.UNDRAIN, agent=host))
        if undrained.exit_code != 0:
            return StepResult(False, f"DHCP undrain of {host} failed: {_problem(undrained)}")
        agent = self._agent(host)
        networks = tuple(drained.get("moved_out", []))
        if not networks or not usable(agent):
            return StepResult(True, "", {"moved_back": 0})
        back = self._request(run, DhcpAction.RETURN, agent=agent.id, networks=networks)
        result = run_dhcp_action(ctx, back)
        returned = _moved(result, target=agent.id)
        detail = {"moved_back": len(returned)}
        if result.exit_code != 0:
            return StepResult(
                False, f"networks could not return to {host}: {_problem(result)}", detail
            )
        return StepResult(True, "", detail)

    def keep_drained(self, run: RunContext, host: str) -> StepResult:
        """After a failure: the canary network moves away, the agent is disabled again."""
        try:
            agent = self._agent(host)
            networks = self.cloud.read_dhcp_snapshot().networks_of_agent(agent.id)
            if not agent.admin_state_up and not networks:
                return StepResult(True, "already drained")
            return self.drain(run, host)
        except L3haError as exc:
            return StepResult(False, f"could not keep the DHCP agent of {host} drained: {exc}")
