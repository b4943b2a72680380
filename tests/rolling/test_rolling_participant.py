"""One rolling participant for every kind: a kind plugs in with its side alone.

The side here is shaped like the gateway chassis one to come: its drain moves
nothing back afterwards, it has no canary object, its restore is the undrain.
Everything the participant does on top (the checks after a drain, the canary's
enable with the drain mark, keeping a host drained) is the same code the L3
and DHCP agents run (tests/rolling/test_rolling_emulator.py, test_rolling_dhcp.py).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from enum import StrEnum
from typing import Any, cast

from l3ha.executor import AgentChange, AgentChangeResult, ExecutorOptions
from l3ha.executor.agents import AgentChangeOutcome
from l3ha.model import Agent
from l3ha.operations.request import OperationResult
from l3ha.operations.rolling import Participant, RollingRequest, RunContext
from l3ha.operations.rolling.participants import CANARY_MARK, SideTraits


class GatewayAction(StrEnum):
    DRAIN = "gateway-drain"
    UNDRAIN = "gateway-undrain"


class GatewaySide:
    """A chassis whose drain hands its gateways to the others (``stuck``: one stays)."""

    traits = SideTraits("gateway", "gateways", "gateway ", "its gateway port")

    def __init__(self, stuck: bool = False) -> None:
        self.agent = Agent("c1", "net-1")
        self.primaries = {"g1", "g2"}
        self.stuck = stuck

    def present(self, run: RunContext, host: str) -> bool:
        return host == self.agent.host

    def find_agent(self, run: RunContext, host: str) -> Agent:
        assert host == self.agent.host
        return self.agent

    def get_agent(self, run: RunContext, agent_id: str) -> Agent:
        return self.agent

    def on_agent(self, run: RunContext, agent_id: str) -> Collection[str]:
        return set(self.primaries)

    def would_move(self, run: RunContext, host: str) -> int:
        return len(self.primaries)

    def leaves(self, result: Any) -> bool:
        return True

    def drain(self, run: RunContext, agent: Agent) -> OperationResult[Any, Any]:
        self.primaries = {"g1"} if self.stuck else set()
        self.agent = replace(self.agent, admin_state_up=False)
        return OperationResult(GatewayAction.DRAIN)

    def undrain(self, run: RunContext, host: str) -> OperationResult[Any, Any]:
        self.agent = replace(self.agent, admin_state_up=True, description="")
        return OperationResult(GatewayAction.UNDRAIN)

    def change_agent(self, run: RunContext, change: AgentChange, agent: Agent) -> AgentChangeResult:
        self.agent = replace(agent, admin_state_up=True, description=change.description or "")
        return AgentChangeResult(change, AgentChangeOutcome.DONE)

    def pick_canary(self, run: RunContext, drained: list[str]) -> str | None:
        return None

    def move_onto(
        self, run: RunContext, agent: Agent, objects: Sequence[str], execution: ExecutorOptions
    ) -> OperationResult[Any, Any]:
        raise AssertionError("nothing moves back onto a gateway chassis")


RUN = RunContext(cast(Any, None), RollingRequest(hosts=("net-1",)))


def test_a_kind_without_a_canary_object_is_drained_enabled_and_restored() -> None:
    side = GatewaySide()
    gateway = Participant(side)
    assert side.present(RUN, "net-1") and not side.present(RUN, "net-2")
    assert side.would_move(RUN, "net-1") == 2
    drained = gateway.drain(RUN, "net-1")
    assert drained.ok and drained.detail["agent"] == "c1" and not side.agent.admin_state_up
    canary = gateway.canary(RUN, "net-1", drained.detail)
    assert canary.ok and canary.reason == "no gateway to return as the canary"
    assert side.agent.admin_state_up and side.agent.description == CANARY_MARK
    assert gateway.restore(RUN, "net-1", drained.detail).ok
    assert side.agent.admin_state_up and side.agent.description == ""
    assert gateway.read_agent(RUN, "net-1") == side.agent


def test_a_drain_that_leaves_something_on_the_agent_fails_in_the_kinds_words() -> None:
    side = GatewaySide(stuck=True)
    drained = Participant(side).drain(RUN, "net-1")
    assert not drained.ok
    assert drained.reason == "1 gateway(s) still on the gateway agent of net-1 after the drain"
    kept = Participant(side).keep_drained(RUN, "net-1")
    assert not kept.ok  # still not empty: the drain fails again
    side.stuck = False
    assert Participant(side).keep_drained(RUN, "net-1").ok
    assert Participant(side).keep_drained(RUN, "net-1").reason == "already drained"
