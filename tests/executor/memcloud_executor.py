"""A small in-memory Cloud for executor logic tests that need a failure at an exact step.

It follows the Neutron rules of NEUTRON.md that the executor relies on
(404 for an admin-down or unknown agent, 409 for a non-HA router hosted
elsewhere or any router on a ``dvr`` agent, idempotent unbind) and records
every write, so tests can assert order and budgets. Everything else is the
emulator's job (see test_emulator_e2e.py). Also the small evacuation fixtures
(``evac_cloud``, ``evac_plan``) and ``run`` (an executor on a ManualClock).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from l3ha.clock import ManualClock
from l3ha.cloud.base import PortState
from l3ha.errors import ApiNotFoundError, ConflictError, L3haError, ReadBackError
from l3ha.executor import Executor, ExecutorOptions, RunResult
from l3ha.journal import Journal, MoveStep
from l3ha.model import Agent, AgentMode, Binding, Move, MoveKind, Plan, Router, Snapshot

Hook = Callable[["MemCloud", str, str, str], None]


@dataclass
class Fault:
    """Raise ``error`` on the next ``times`` calls of ``op`` matching router/agent."""

    op: str
    error: L3haError
    times: int = 1
    router: str | None = None
    agent: str | None = None
    after_effect: bool = False  # perform the change, then raise (a lost answer)


@dataclass
class MemCloud:
    agents: dict[str, Agent] = field(default_factory=dict)
    routers: dict[str, Router] = field(default_factory=dict)
    bindings: dict[str, list[str]] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    hooks: list[Hook] = field(default_factory=list)
    polls_to_active: int = 0  # router_ports calls before a bound router's ports turn ACTIVE
    never_active: set[str] = field(default_factory=set)  # agent ids that never process
    writes: list[tuple[str, str, str]] = field(default_factory=list)
    polls: dict[str, int] = field(default_factory=dict)
    port_calls: int = 0  # ports_of_routers calls (each covers many routers)
    calls: Counter[str] = field(default_factory=Counter)  # API calls by method, read-backs too
    lock: threading.RLock = field(default_factory=threading.RLock)

    @classmethod
    def build(
        cls,
        agents: dict[str, dict[str, object]],
        routers: dict[str, list[str]],
        ha: set[str] | None = None,
    ) -> MemCloud:
        """``agents``: id -> Agent fields; ``routers``: id -> hosting agent ids."""
        cloud = cls()
        for agent_id, given in agents.items():
            fields = {"host": f"host-{agent_id}", **given}
            cloud.agents[agent_id] = Agent(id=agent_id, **fields)  # type: ignore[arg-type]
        for router_id, hosts in routers.items():
            cloud.routers[router_id] = Router(id=router_id, ha=router_id in (ha or set()))
            cloud.bindings[router_id] = list(hosts)
        return cloud

    # --- test controls -------------------------------------------------------

    def set_agent(self, agent_id: str, **changes: object) -> None:
        with self.lock:
            self.agents[agent_id] = replace(self.agents[agent_id], **changes)  # type: ignore[arg-type]

    def hosts_of(self, router_id: str) -> list[str]:
        with self.lock:
            return list(self.bindings.get(router_id, []))

    def _fault(self, op: str, router: str, agent: str) -> Fault | None:
        for fault in self.faults:
            if (
                fault.op == op
                and fault.times > 0
                and fault.router in (None, router)
                and fault.agent in (None, agent)
            ):
                fault.times -= 1
                return fault
        return None

    def _call(self, op: str, router: str, agent: str, change: Callable[[], None]) -> None:
        with self.lock:
            self.calls[op] += 1
            fault = self._fault(op, router, agent)
            if fault is not None and not fault.after_effect:
                raise fault.error
            change()
            self.writes.append((op, router, agent))
            self.polls[router] = 0
        for hook in list(self.hooks):
            hook(self, op, router, agent)
        if fault is not None:
            raise fault.error

    # --- the Cloud protocol --------------------------------------------------

    def list_agents(self) -> list[Agent]:
        with self.lock:
            self.calls["list_agents"] += 1
            return list(self.agents.values())

    def get_agent(self, agent_id: str) -> Agent:
        with self.lock:
            self.calls["get_agent"] += 1
            fault = self._fault("get_agent", "", agent_id)
            if fault is not None:
                raise fault.error
            if agent_id not in self.agents:
                raise ApiNotFoundError(f"agent {agent_id} not found")
            return self.agents[agent_id]

    def list_routers(self) -> list[Router]:
        with self.lock:
            return list(self.routers.values())

    def read_snapshot(self, with_ha_state: bool = False) -> Snapshot:
        with self.lock:
            bindings = tuple(Binding(r, a) for r, hosts in self.bindings.items() for a in hosts)
            return Snapshot(tuple(self.agents.values()), tuple(self.routers.values()), bindings)

    def routers_on_agent(self, agent_id: str) -> list[Binding]:
        with self.lock:
            return [Binding(r, agent_id) for r, hosts in self.bindings.items() if agent_id in hosts]

    def router_bindings(self, router_id: str) -> list[Binding]:
        with self.lock:
            self.calls["router_bindings"] += 1
            fault = self._fault("router_bindings", router_id, "")
            if fault is not None:
                raise fault.error
            if router_id not in self.routers:
                raise ApiNotFoundError(f"router {router_id} not found")
            return [Binding(router_id, a) for a in self.bindings[router_id]]

    def bind(self, router_id: str, agent_id: str) -> list[Binding]:
        def change() -> None:
            agent = self.agents.get(agent_id)
            if router_id not in self.routers:
                raise ApiNotFoundError(f"router {router_id} not found")
            if agent is None or not agent.admin_state_up:
                raise ApiNotFoundError(f"agent {agent_id} is not a valid L3 agent")
            if agent.mode is AgentMode.DVR:
                raise ConflictError(f"router {router_id} cannot go on dvr agent {agent_id}")
            hosts = self.bindings[router_id]
            if agent_id in hosts:
                return
            if hosts and not self.routers[router_id].ha:
                raise ConflictError(f"router {router_id} is hosted by {hosts[0]}")
            hosts.append(agent_id)

        self._call("bind", router_id, agent_id, change)
        return self._read_back(router_id, agent_id, present=True)

    def _read_back(self, router_id: str, agent_id: str, *, present: bool) -> list[Binding]:
        """What the adapter does after a write: read the bindings once, check the change."""
        bindings = self.router_bindings(router_id)
        if (agent_id in {b.agent_id for b in bindings}) != present:
            raise ReadBackError(f"{router_id} on {agent_id}: not as written when read back")
        return bindings

    def unbind(self, router_id: str, agent_id: str) -> list[Binding]:
        def change() -> None:
            if router_id not in self.routers:
                raise ApiNotFoundError(f"router {router_id} not found")
            if agent_id in self.bindings[router_id]:
                self.bindings[router_id].remove(agent_id)

        self._call("unbind", router_id, agent_id, change)
        return self._read_back(router_id, agent_id, present=False)

    def set_admin_state(self, agent_id: str, up: bool) -> None:
        self.set_agent(agent_id, admin_state_up=up)

    def set_description(self, agent_id: str, description: str) -> None:
        self.set_agent(agent_id, description=description)

    def router_ports(self, router_id: str) -> list[PortState]:
        with self.lock:
            self.polls[router_id] = self.polls.get(router_id, 0) + 1
            hosts = self.bindings.get(router_id, [])
            if not hosts:
                return [PortState(f"{router_id}-gw", "network:router_gateway", "DOWN", "")]
            ready = self.polls[router_id] > self.polls_to_active
            if self.routers[router_id].ha:
                return [
                    PortState(
                        f"{router_id}-ha-{a}",
                        "network:router_ha_interface",
                        self._status(a, ready),
                        self.agents[a].host,
                    )
                    for a in hosts
                ]
            agent = self.agents[hosts[0]]
            status = self._status(hosts[0], ready)
            return [
                PortState(f"{router_id}-gw", "network:router_gateway", status, agent.host),
                PortState(f"{router_id}-if", "network:router_interface", status, agent.host),
            ]

    def ports_of_routers(self, router_ids: Sequence[str]) -> dict[str, list[PortState]]:
        with self.lock:
            self.port_calls += 1
            self.calls["ports_of_routers"] += 1
        return {r: self.router_ports(r) for r in router_ids}

    def _status(self, agent_id: str, ready: bool) -> str:
        up = self.agents[agent_id].alive and agent_id not in self.never_active and ready
        return "ACTIVE" if up else "BUILD"


def intent_checker(journal: Journal) -> Callable[[MemCloud, str, str, str], None]:
    """A hook asserting that every write was journaled as an intent first (rule: intent
    before the first write; a bind goes where the journal says the move is headed)."""

    def check(cloud: MemCloud, op: str, router: str, agent: str) -> None:
        (latest,) = journal.history(last=1)
        started = [
            m
            for m in journal.moves(latest.id)
            if m.router_id == router and m.step is not MoveStep.PLANNED and not m.finished
        ]
        assert len(started) == 1, (op, router, started)  # the move doing this write
        record = started[0]
        if op == "bind":
            assert record.target == agent, (router, record.target, agent)

    return check


DEAD = {"alive": False}


def evac_cloud(n: int = 6) -> MemCloud:
    return MemCloud.build(
        {"a": DEAD, "b": {}, "c": {}, "d": {}},
        {f"r{i}": ["a"] for i in range(n)},
    )


def evac_plan(n: int = 6, targets: tuple[str, ...] = ("b", "c"), canary: int = 0) -> Plan:
    moves = tuple(
        Move(
            f"r{i}",
            MoveKind.MOVE,
            target=targets[i % len(targets)],
            source="a",
            reason="source dead",
        )
        for i in range(n)
    )
    return Plan("evacuate", moves, canary=canary)


def run(
    cloud: MemCloud,
    plan: Plan,
    tmp_path: Path,
    fallbacks: object = None,
    require_dead_source: bool | None = None,
    **opts: object,
) -> tuple[RunResult, Journal, ManualClock]:
    """Run ``plan`` on ``cloud`` with a fresh journal, checking intent-before-write."""
    clock = ManualClock()
    journal = Journal(tmp_path / "state", clock)
    cloud.hooks.append(intent_checker(journal))
    # Agents are read afresh for every question here (the ManualClock hardly moves); the
    # shared view's period is tested on its own (test_api_economy.py).
    defaults = {"port_poll_interval": 0.5, "agent_recheck_interval": 0.0}
    options = ExecutorOptions(**{**defaults, **opts})  # type: ignore[arg-type]
    result = Executor(cloud, journal, clock, options).run(  # type: ignore[arg-type]
        plan,
        fallback_targets=fallbacks,
        require_dead_source=require_dead_source,
        routers=cloud.routers,  # as the operations pass their snapshot's routers
    )
    return result, journal, clock
