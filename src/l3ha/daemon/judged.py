"""The cloud as an evacuation the watch started sees it: agents l3ha judged dead stay dead
until their heartbeat changes. I/O: the cloud it wraps.

The executor re-reads an evacuated agent before each move and leaves its routers where they
are once the agent is usable again (safety rule 5). It reads Neutron's ``alive`` flag,
which lags l3ha's own judgement whenever that comes first: ``--dead-after`` below
Neutron's agent_down_time, or ``--dataplane-confirms``. Liveness is l3ha's own
observation (rule 7), so here an agent the watch judged DEAD reads ``alive: false`` as
long as its heartbeat value is the one l3ha judged on; once the value changes the agent
reads as Neutron reports it, and a source that is back is left alone as before. Every other
read, and every write, goes to the wrapped cloud unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from l3ha.cloud.base import Cloud, PortState
from l3ha.model import Agent, Binding, Router, Snapshot


class JudgedCloud:
    """``cloud`` with ``dead`` (agent id -> the heartbeat value it was judged dead on)
    applied to every agent read (see the module docstring)."""

    def __init__(self, cloud: Cloud, dead: Mapping[str, str]) -> None:
        self._cloud = cloud
        self._dead = dict(dead)

    def _judged(self, agent: Agent) -> Agent:
        judged_on = self._dead.get(agent.id)
        if judged_on is None or agent.heartbeat_timestamp != judged_on:
            return agent
        return replace(agent, alive=False)

    def list_agents(self) -> list[Agent]:
        return [self._judged(a) for a in self._cloud.list_agents()]

    def get_agent(self, agent_id: str) -> Agent:
        return self._judged(self._cloud.get_agent(agent_id))

    def read_snapshot(self, with_ha_state: bool = False) -> Snapshot:
        snapshot = self._cloud.read_snapshot(with_ha_state)
        return replace(snapshot, agents=tuple(self._judged(a) for a in snapshot.agents))

    def list_routers(self) -> list[Router]:
        return self._cloud.list_routers()

    def routers_on_agent(self, agent_id: str) -> list[Binding]:
        return self._cloud.routers_on_agent(agent_id)

    def router_bindings(self, router_id: str) -> list[Binding]:
        return self._cloud.router_bindings(router_id)

    def bind(self, router_id: str, agent_id: str) -> list[Binding]:
        return self._cloud.bind(router_id, agent_id)

    def unbind(self, router_id: str, agent_id: str) -> list[Binding]:
        return self._cloud.unbind(router_id, agent_id)

    def set_admin_state(self, agent_id: str, up: bool) -> None:
        self._cloud.set_admin_state(agent_id, up)

    def set_description(self, agent_id: str, description: str) -> None:
        self._cloud.set_description(agent_id, description)

    def router_ports(self, router_id: str) -> list[PortState]:
        return self._cloud.router_ports(router_id)

    def ports_of_routers(self, router_ids: Sequence[str]) -> dict[str, list[PortState]]:
        return self._cloud.ports_of_routers(router_ids)
