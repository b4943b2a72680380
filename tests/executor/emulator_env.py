"""Shared helpers for the executor's emulator tests: start an emulator, kill agents, check ports.

Not a test module (no tests here); imported as ``tests.executor.emulator_env``.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from l3ha.clock import SystemClock
from l3ha.cloud.adapter import NeutronCloud, connect
from l3ha.cloud.base import Cloud
from l3ha.emulator import Emulator
from l3ha.emulator.testing import FAST as FAST_AGENTS
from l3ha.emulator.testing import Clocking, emulated_cloud
from l3ha.executor import Executor, ExecutorOptions
from l3ha.journal import Journal
from l3ha.model import Binding, Move, MoveKind, Plan, Snapshot

#: ``l3ha.emulator.testing.FAST`` with routers processed in 50-60 ms.
FAST = {**FAST_AGENTS, "router_base_time": 0.05, "router_port_time": 0.01}


def wait_until(check: Callable[[], bool], timeout: float = 15.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class Env:
    def __init__(self, emu: Emulator, cloud: NeutronCloud, tmp_path: Path,
                 closing: contextlib.ExitStack | None = None) -> None:
        self.emu = emu
        self.cloud = cloud
        self.tmp_path = tmp_path
        #: Ends the emulated cloud (``emu.stop()`` alone stops the emulator).
        self.closing = closing or contextlib.ExitStack()

    def agent_id(self, host: str) -> str:
        return self.emu.agent_ids_by_host()[host]

    def kill(self, host: str) -> str:
        agent_id = self.agent_id(host)
        self.emu.faults.kill_agent(host)
        wait_until(lambda: not self.cloud.get_agent(agent_id).alive, what=f"{host} dead")
        return agent_id

    def evacuation(self, host: str, targets: list[str] | None = None, canary: int = 0) -> Plan:
        snapshot = self.cloud.read_snapshot()
        source = self.agent_id(host)
        chosen = targets or sorted(
            a.id for a in snapshot.agents if a.id != source and a.alive and a.can_host_centralized
        )
        routers = sorted(b.router_id for b in snapshot.bindings_of_agent(source))
        moves = tuple(
            Move(r, MoveKind.MOVE, chosen[i % len(chosen)], source, "evacuate")
            for i, r in enumerate(routers)
        )
        return Plan("evacuate", moves, canary=canary)

    def executor(self, cloud: Cloud | None = None, **opts: object) -> tuple[Executor, Journal]:
        journal = Journal(self.tmp_path / "state")
        # The tests revive agents at exact points: agents are read afresh for every question
        # (agent_recheck_interval 0); the shared view's period is tested in test_api_economy.
        defaults = {"port_poll_interval": 0.05, "port_timeout": 20.0, "agent_recheck_interval": 0.0}
        options = ExecutorOptions(**{**defaults, **opts})  # type: ignore[arg-type]
        return Executor(cloud or self.cloud, journal, SystemClock(), options), journal


def start_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **cfg: object) -> Env:
    """A real-time emulated cloud (4 agents, 24 routers, ``FAST`` plus ``cfg``) named by
    this process's environment."""
    settings = {"agents": 4, "routers": 24, "busy": 2, **FAST, **cfg}
    closing = contextlib.ExitStack()
    cloud = closing.enter_context(emulated_cloud(Clocking.REAL, workdir=tmp_path, **settings))
    assert cloud.emulator is not None
    for key in [k for k in os.environ if k.startswith("OS_")]:
        monkeypatch.delenv(key)
    for key, value in cloud.environ().items():
        monkeypatch.setenv(key, value)
    return Env(cloud.emulator, connect(), tmp_path, closing)


def assert_hosted_and_active(env: Env, router_ids: list[str], dead: set[str]) -> None:
    snapshot = env.cloud.read_snapshot()
    for router_id in router_ids:
        hosts = [b.agent_id for b in snapshot.bindings_of_router(router_id)]
        assert len(hosts) == 1 and hosts[0] not in dead, (router_id, hosts)
        host = snapshot.agents_by_id[hosts[0]].host
        ports = env.cloud.router_ports(router_id)
        assert ports and all(p.status == "ACTIVE" and p.host == host for p in ports), ports


def routers_on(snapshot: Snapshot, agent_id: str) -> list[str]:
    return sorted(b.router_id for b in snapshot.bindings_of_agent(agent_id))


def replica_replacements(snapshot: Snapshot, source: str, reason: str) -> list[Move]:
    """ADD_REPLICA on the first live agent not hosting it, then REMOVE_REPLICA off ``source``,
    for every router on ``source``."""
    alive = sorted(a.id for a in snapshot.agents if a.alive)
    moves: list[Move] = []
    for router_id in routers_on(snapshot, source):
        hosting = {b.agent_id for b in snapshot.bindings_of_router(router_id)}
        target = next(a for a in alive if a not in hosting)
        moves.append(Move(router_id, MoveKind.ADD_REPLICA, target, source, reason))
        moves.append(Move(router_id, MoveKind.REMOVE_REPLICA, None, source, reason))
    return moves


class TriggerCloud:
    """The adapter, with a test action run once right after the first matching write.

    Lets an emulator test disturb the world at an exact point of a move (revive
    the source after the first bind, start an API outage after the first unbind);
    every call still goes to the emulator through the real adapter.
    """

    def __init__(self, cloud: NeutronCloud, op: str, action: Callable[[], None]) -> None:
        self._cloud = cloud
        self._op = op
        self._action: Callable[[], None] | None = action

    def __getattr__(self, name: str) -> object:
        return getattr(self._cloud, name)

    def _after(self, op: str) -> None:
        if op == self._op and self._action is not None:
            action, self._action = self._action, None
            action()

    def bind(self, router_id: str, agent_id: str) -> list[Binding]:
        bindings = self._cloud.bind(router_id, agent_id)
        self._after("bind")
        return bindings

    def unbind(self, router_id: str, agent_id: str) -> list[Binding]:
        bindings = self._cloud.unbind(router_id, agent_id)
        self._after("unbind")
        return bindings
