"""Control-plane events: agent and router changes seen by polling a cloud, stamped by the clock."""

from __future__ import annotations

from dataclasses import replace

from l3ha.clock import ManualClock
from l3ha.errors import UnreachableError
from l3ha.model import Agent, Binding, HAState
from l3ha.probe.events import CloudEventPoller, Event, agent_changes, binding_changes


class FakeCloud:
    """Just the two reads the poller makes (an edge we do not own in production)."""

    def __init__(self) -> None:
        self.agents = [Agent("a1", "net-1"), Agent("a2", "net-2")]
        self.bindings = {
            "r1": [Binding("r1", "a1", HAState.ACTIVE), Binding("r1", "a2", HAState.STANDBY)]
        }
        self.down = False

    def list_agents(self) -> list[Agent]:
        if self.down:
            raise UnreachableError("connection refused")
        return list(self.agents)

    def router_bindings(self, router_id: str) -> list[Binding]:
        return list(self.bindings[router_id])


def test_agent_changes_name_host_and_new_state() -> None:
    before = {"a1": Agent("a1", "net-1"), "a2": Agent("a2", "net-2")}
    after = {
        "a1": Agent("a1", "net-1", alive=False),
        "a3": Agent("a3", "net-3"),
        "a2": Agent("a2", "net-2", admin_state_up=False),
    }
    assert agent_changes(before, after) == [
        "agent net-1: dead",
        "agent net-2: admin down",
        "agent net-3: appeared (alive)",
    ]
    assert agent_changes(after, {}) == [
        "agent net-1: gone",
        "agent net-2: gone",
        "agent net-3: gone",
    ]


def test_binding_changes_show_ha_state_moves() -> None:
    hosts = {"a1": "net-1", "a2": "net-2", "a3": "net-3"}
    before = [Binding("r", "a1", HAState.ACTIVE), Binding("r", "a2", HAState.STANDBY)]
    after = [Binding("r", "a2", HAState.ACTIVE), Binding("r", "a3", HAState.STANDBY)]
    assert binding_changes("r", before, after, hosts) == [
        "router r on net-2: standby -> active",
        "router r: bound to net-3 (standby)",
        "router r: unbound from net-1",
    ]


def test_poller_reports_baseline_then_changes_with_clock_stamps() -> None:
    cloud = FakeCloud()
    clock = ManualClock()
    seen: list[Event] = []
    poller = CloudEventPoller(cloud, clock, routers=["r1"])
    poller._sink = seen.append  # the sink start() would install, without the thread
    [baseline] = poller.poll_once()
    assert baseline.text == (
        "cloud: watching 2 L3 agents (2 alive); router r1 on net-1 (active), net-2 (standby)"
    )
    clock.advance(2.5)
    cloud.agents[0] = replace(cloud.agents[0], alive=False)
    cloud.bindings["r1"] = [
        Binding("r1", "a1", HAState.STANDBY),
        Binding("r1", "a2", HAState.ACTIVE),
    ]
    events = poller.poll_once()
    assert [e.text for e in events] == [
        "agent net-1: dead",
        "router r1 on net-1: active -> standby",
        "router r1 on net-2: standby -> active",
    ]
    assert {e.mono for e in events} == {clock.monotonic()}
    assert events[0].wall == clock.wall().timestamp()
    assert seen == [baseline, *events]
    assert poller.poll_once() == []


def test_poll_failures_are_reported_once_and_recovery_too() -> None:
    cloud = FakeCloud()
    poller = CloudEventPoller(cloud, ManualClock())
    poller.poll_once()
    cloud.down = True
    assert [e.text for e in poller.poll_once()] == ["cloud: poll failed: connection refused"]
    assert poller.poll_once() == []
    cloud.down = False
    assert [e.text for e in poller.poll_once()] == ["cloud: poll recovered"]
