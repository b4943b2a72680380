"""The three kinds of placement as the behaviour suite drives them (not a test module).

Each harness runs an action of its kind through the operations layer (the
same code the command line, the daemon and rolling call) and reduces what
came back to the facts the shared semantics speak about: exit code, move
outcomes, warnings, problems. It also knows how to leave the journal and the
cloud as a ``kill -9`` in the middle of one move would, which emulated cloud it runs
on (``settings``: L3 and DHCP agents on ``net-1``..``net-4``, or ML2/OVN gateway chassis
``gw-1``..``gw-4``) and how a node dies there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from l3ha.clock import SystemClock
from l3ha.cloud.adapter import NeutronCloud
from l3ha.cloud.dhcp import NeutronDhcp
from l3ha.cloud.ovn import NeutronOvn
from l3ha.dhcp_model import DhcpMove, DhcpMoveKind, DhcpSnapshot, usable
from l3ha.emulator import Emulator
from l3ha.emulator.testing import FAST
from l3ha.executor import ExecutorOptions
from l3ha.executor.dhcp_steps import journal_move
from l3ha.executor.gateway_steps import journal_move as journal_gateway_move
from l3ha.journal import Journal, MoveStep
from l3ha.model import Agent, Move, MoveKind, Snapshot
from l3ha.operations.actions import run_action
from l3ha.operations.context import OperationContext
from l3ha.operations.dhcp import DhcpContext, run_dhcp_action
from l3ha.operations.ovn import GatewayAction, GatewayContext, GatewayRequest, evacuate_or_drain
from l3ha.operations.request import (
    Action,
    ActionRequest,
    DhcpAction,
    DhcpRequest,
    OperationResult,
)
from l3ha.ovn_model import OvnSnapshot
from l3ha.planner.gateway import GatewayMove, GatewayMoveKind

#: Executor options of the suite: one move at a time, so "started" is countable.
OPTIONS = ExecutorOptions(
    concurrency=1, port_poll_interval=0.05, port_timeout=20.0, agent_recheck_interval=0.0
)


#: ``FAST`` agents (pre-calibration timing), both agent kinds on four nodes.
AGENTS_CLOUD: dict[str, object] = {
    **FAST,
    "agents": 4,
    "routers": 24,
    "dhcp_agents": 4,
    "networks": 24,
    "dhcp_network_time": 0.03,
    "seed": 5,
}
#: ML2/OVN: four gateway chassis, every router's group on all of them.
OVN_CLOUD: dict[str, object] = {**FAST, "ovn": True, "ovn_chassis": 4, "routers": 12, "seed": 5}


@dataclass
class Env:
    """The emulator and its views through the adapter."""

    emu: Emulator
    cloud: NeutronCloud
    dhcp: NeutronDhcp
    state_dir: Path
    ovn: NeutronOvn

    def journal(self) -> Journal:
        return Journal(self.state_dir)


@dataclass(frozen=True)
class Ran:
    """What one action reported, the same for every kind."""

    exit_code: int
    outcomes: tuple[str, ...]
    warnings: tuple[str, ...]
    problems: tuple[str, ...]
    notices: tuple[str, ...]

    def count(self, outcome: str) -> int:
        return sum(1 for o in self.outcomes if o == outcome)


class Kind(Protocol):
    name: str
    cli: tuple[str, ...]  # the command prefix: ``l3ha [dhcp] evacuate ...``
    noun: str
    settings: dict[str, object]  # the emulated cloud it runs on
    nodes: tuple[str, ...]  # its agents' (chassis') hosts
    disables: bool  # a drain disables the agent (Neutron refuses to disable an OVN agent)
    refused_alive: str  # what the refusal to evacuate a live agent says

    def kill(self, env: Env, host: str) -> None: ...
    def revive(self, env: Env, host: str) -> None: ...

    def on(self, env: Env, host: str) -> set[str]: ...
    def agent(self, env: Env, host: str) -> Agent: ...
    def alive(self, env: Env, host: str) -> bool: ...
    def stale(self, env: Env) -> object: ...
    def act(self, env: Env, action: str, host: str, journal: Journal | None, **how: Any) -> Ran: ...
    def crash_mid_move(self, env: Env, journal: Journal, host: str, target_host: str) -> str: ...
    def hosts_of(self, env: Env, obj: str) -> set[str]: ...
    def disable(self, env: Env, host: str) -> None: ...
    def cramped(self, env: Env, host: str) -> list[str]: ...
    def land(self, env: Env, host: str, source_host: str) -> str: ...
    def enabled(self, env: Env, host: str) -> bool: ...


def _once_then_fresh(stale: object | None, fresh: Callable[[], object]) -> Callable[[], object]:
    """An observer that hands out ``stale`` once (what the plan is made on), then reads."""
    handed: list[bool] = []

    def observe() -> object:
        if stale is not None and not handed:
            handed.append(True)
            return stale
        return fresh()

    return observe


@dataclass(frozen=True)
class Ask:
    """One action to run: ``stale``, a snapshot to plan on instead of a fresh read."""

    action: str
    host: str
    journal: Journal | None
    options: ExecutorOptions = OPTIONS
    should_stop: Callable[[], bool] | None = None
    budget: int | None = None
    stale: object | None = None


def _ran(
    result: OperationResult[Any, Any], notices: list[str], same: dict[str, str] | None = None
) -> Ran:
    """What an action of any kind reported (``same``: outcomes that mean another)."""
    runs = [e.run for e in result.executed]
    same = same or {}
    return Ran(
        result.exit_code,
        tuple(same.get(r.outcome, r.outcome.value) for run in runs for r in run.results),
        tuple(w for run in runs for w in run.warnings),
        result.problems,
        tuple(notices),
    )


class _Kind:
    settings = AGENTS_CLOUD
    nodes = ("net-1", "net-2", "net-3", "net-4")
    disables = True
    refused_alive = "alive and enabled"

    def kill(self, env: Env, host: str) -> None:
        env.emu.faults.kill_agent(host)

    def revive(self, env: Env, host: str) -> None:
        env.emu.faults.revive_agent(host)

    def alive(self, env: Env, host: str) -> bool:
        return self.agent(env, host).alive

    def agent(self, env: Env, host: str) -> Agent:
        raise NotImplementedError

    def act(self, env: Env, action: str, host: str, journal: Journal | None, **how: Any) -> Ran:
        """Run ``action`` on ``host`` (``how``: the other fields of ``Ask``)."""
        return self.run(env, Ask(action, host, journal, **how))

    def run(self, env: Env, ask: Ask) -> Ran:
        raise NotImplementedError


class RouterKind(_Kind):
    name = "router"
    cli: tuple[str, ...] = ()
    noun = "router"

    def on(self, env: Env, host: str) -> set[str]:
        snap = env.cloud.read_snapshot()
        return {b.router_id for b in snap.bindings_of_agent(snap.find_agent(host).id)}

    def agent(self, env: Env, host: str) -> Agent:
        return env.cloud.read_snapshot().find_agent(host)

    def stale(self, env: Env) -> object:
        return env.cloud.read_snapshot()

    def land(self, env: Env, host: str, source_host: str) -> str:
        """What Neutron's scheduler might do: move a router of ``source_host`` to ``host``."""
        snap = env.cloud.read_snapshot()
        source, target = snap.find_agent(source_host).id, snap.find_agent(host).id
        router = sorted(b.router_id for b in snap.bindings_of_agent(source))[0]
        env.cloud.unbind(router, source)
        env.cloud.bind(router, target)
        return router

    def cramped(self, env: Env, host: str) -> list[str]:
        """Options under which only some of ``host``'s routers find room elsewhere."""
        snap = env.cloud.read_snapshot()
        source = snap.find_agent(host).id
        loads = [len(snap.bindings_of_agent(a.id)) for a in snap.agents if a.id != source]
        cap = max(loads) + 1
        assert 0 < sum(cap - load for load in loads) < len(snap.bindings_of_agent(source))
        return ["--max-routers-per-agent", str(cap)]

    def disable(self, env: Env, host: str) -> None:
        env.cloud.set_admin_state(env.cloud.read_snapshot().find_agent(host).id, False)

    def enabled(self, env: Env, host: str) -> bool:
        return env.cloud.read_snapshot().find_agent(host).admin_state_up

    def hosts_of(self, env: Env, obj: str) -> set[str]:
        snap = env.cloud.read_snapshot()
        return {snap.agents_by_id[b.agent_id].host for b in snap.bindings_of_router(obj)}

    def run(self, env: Env, ask: Ask) -> Ran:
        notices: list[str] = []
        observe = _once_then_fresh(ask.stale, env.cloud.read_snapshot)
        ctx = OperationContext(
            env.cloud,
            ask.journal,
            SystemClock(),
            notices.append,
            observer=lambda _ha: observe(),  # type: ignore[arg-type,return-value]
            should_stop=ask.should_stop,
        )
        request = ActionRequest(
            Action(ask.action), agent=ask.host, execution=ask.options, move_budget=ask.budget
        )
        result = run_action(ctx, request)
        return _ran(result, notices)

    def crash_mid_move(self, env: Env, journal: Journal, host: str, target_host: str) -> str:
        """A move journalled and half written (unbound from the source, not yet bound)."""
        snap = env.cloud.read_snapshot()
        source, target = snap.find_agent(host).id, snap.find_agent(target_host).id
        router = sorted(b.router_id for b in snap.bindings_of_agent(source))[0]
        args = {"command": "evacuate", "agent": host}
        op, (move_id,) = journal.begin_operation(
            "evacuate", args, [Move(router, MoveKind.MOVE, target, source, "evacuate")]
        )
        journal.record_step(move_id, MoveStep.INTENT, target=target)
        env.cloud.unbind(router, source)
        journal.record_step(move_id, MoveStep.UNBOUND)
        journal.abandon(op)  # the process is gone
        return router


class DhcpKind(_Kind):
    name = "dhcp"
    cli: tuple[str, ...] = ("dhcp",)
    noun = "network"

    def on(self, env: Env, host: str) -> set[str]:
        snap = env.dhcp.read_dhcp_snapshot()
        return set(snap.networks_of_agent(snap.find_agent(host).id))

    def agent(self, env: Env, host: str) -> Agent:
        return env.dhcp.read_dhcp_snapshot().find_agent(host)

    def stale(self, env: Env) -> object:
        return env.dhcp.read_dhcp_snapshot()

    def land(self, env: Env, host: str, source_host: str) -> str:
        """What Neutron's scheduler might do: add a network of ``source_host`` to ``host``."""
        snap = env.dhcp.read_dhcp_snapshot()
        source, target = snap.find_agent(source_host).id, snap.find_agent(host).id
        network = sorted(snap.networks_of_agent(source))[0]
        env.dhcp.add_network_to_agent(network, target)
        return network

    def cramped(self, env: Env, host: str) -> list[str]:
        """Options under which ``host``'s networks find no room elsewhere."""
        self.disable(env, "net-3")
        return ["--to", "net-3"]

    def disable(self, env: Env, host: str) -> None:
        agent = env.dhcp.read_dhcp_snapshot().find_agent(host)
        env.dhcp.set_dhcp_agent_state(agent.id, False, None)

    def enabled(self, env: Env, host: str) -> bool:
        return env.dhcp.read_dhcp_snapshot().find_agent(host).admin_state_up

    def hosts_of(self, env: Env, obj: str) -> set[str]:
        snap = env.dhcp.read_dhcp_snapshot()
        agents = [snap.agents_by_id[a] for a in snap.agents_of_network(obj)]
        return {a.host for a in agents if usable(a)}

    def run(self, env: Env, ask: Ask) -> Ran:
        notices: list[str] = []
        observe = _once_then_fresh(ask.stale, env.dhcp.read_dhcp_snapshot)
        ctx = DhcpContext(
            env.dhcp,
            ask.journal,
            SystemClock(),
            notices.append,
            observer=observe,  # type: ignore[arg-type]
            should_stop=ask.should_stop,
        )
        request = DhcpRequest(
            DhcpAction(f"dhcp-{ask.action}"),
            agent=ask.host,
            execution=ask.options,
            move_budget=ask.budget,
        )
        result = run_dhcp_action(ctx, request)
        return _ran(result, notices)

    def crash_mid_move(self, env: Env, journal: Journal, host: str, target_host: str) -> str:
        """A move journalled and half written (added to the target, source not removed)."""
        snap: DhcpSnapshot = env.dhcp.read_dhcp_snapshot()
        source, target = snap.find_agent(host).id, snap.find_agent(target_host).id
        network = sorted(snap.networks_of_agent(source))[0]
        move = DhcpMove(network, DhcpMoveKind.MOVE, target, source, "evacuate", source_down=True)
        args = {"command": "dhcp-evacuate", "agent": host}
        op, (move_id,) = journal.begin_operation("dhcp-evacuate", args, [journal_move(move)])
        journal.record_step(move_id, MoveStep.INTENT, target=target)
        env.dhcp.add_network_to_agent(network, target)
        journal.record_step(move_id, MoveStep.BOUND, target=target)
        journal.abandon(op)  # the process is gone
        return network


#: Gateway outcomes that take a router off the evacuated chassis, as "moved" does.
_OFF_THE_CHASSIS = {"replaced": "moved", "removed": "moved"}


class GatewayKind(_Kind):
    name = "gateway"
    cli: tuple[str, ...] = ()
    noun = "gateway"  # as history names its moves: a router's gateway
    settings = OVN_CLOUD
    nodes = ("gw-1", "gw-2", "gw-3", "gw-4")
    disables = False
    refused_alive = "is alive: evacuate is for a dead chassis"

    def kill(self, env: Env, host: str) -> None:
        env.emu.faults.kill_chassis(host)

    def revive(self, env: Env, host: str) -> None:
        env.emu.faults.revive_chassis(host)

    def on(self, env: Env, host: str) -> set[str]:
        snap = env.ovn.read_ovn_snapshot()
        return set(snap.routers_of(snap.find_chassis(host).id))

    def agent(self, env: Env, host: str) -> Agent:
        return env.ovn.read_ovn_snapshot().find_chassis(host)

    def stale(self, env: Env) -> object:
        return env.ovn.read_ovn_snapshot()

    def hosts_of(self, env: Env, obj: str) -> set[str]:
        """Where the router's gateway runs: its primary chassis."""
        snap = env.ovn.read_ovn_snapshot()
        primary = snap.primary(obj)
        return set() if primary is None else {snap.chassis_by_id[primary].host}

    def run(self, env: Env, ask: Ask) -> Ran:
        notices: list[str] = []
        observe = _once_then_fresh(ask.stale, env.ovn.read_ovn_snapshot)
        ctx = GatewayContext(
            env.ovn,
            ask.journal,
            SystemClock(),
            notices.append,
            observer=observe,  # type: ignore[arg-type]
            should_stop=ask.should_stop,
        )
        action = GatewayAction(ask.action)
        request = GatewayRequest(action, ask.host, execution=ask.options, move_budget=ask.budget)
        result = evacuate_or_drain(ctx, request)
        return _ran(result, notices, _OFF_THE_CHASSIS)

    def crash_mid_move(self, env: Env, journal: Journal, host: str, target_host: str) -> str:
        """A move journalled and half written (the dead chassis removed, the replacement
        not yet added)."""
        snap: OvnSnapshot = env.ovn.read_ovn_snapshot()
        source, target = snap.find_chassis(host).id, snap.find_chassis(target_host).id
        router = sorted(snap.routers_of(source))[0]
        env.ovn.remove(router, target)  # so the replacement is needed
        move = GatewayMove(router, GatewayMoveKind.REPLACE, source, target, 0, "evacuate")
        args = {"command": "evacuate", "agent": host}
        op, (move_id,) = journal.begin_operation("ovn-evacuate", args, [journal_gateway_move(move)])
        journal.record_step(move_id, MoveStep.INTENT, target=target)
        env.ovn.remove(router, source)
        journal.record_step(move_id, MoveStep.UNBOUND)
        journal.abandon(op)  # the process is gone
        return router


KINDS: tuple[Kind, ...] = (RouterKind(), DhcpKind(), GatewayKind())
SNAPSHOT_TYPES = (Snapshot, DhcpSnapshot, OvnSnapshot)
