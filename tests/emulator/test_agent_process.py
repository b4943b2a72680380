"""stop-agent / start-agent: the agent process stopped for an upgrade, not the node."""

from __future__ import annotations

from l3ha.clock import ManualClock
from l3ha.emulator import Emulator
from l3ha.emulator.faults import fault_from_words

from .conftest import Http, make


def agent(api: Http, host: str) -> dict:
    status, doc = api.get(f"/v2.0/agents/{api.agent_id(host)}")
    assert status == 200
    return doc["agent"]


def hosted_by(emu: Emulator, host: str) -> list[str]:
    return sorted(emu.world.agents_by_host[host].routers)


def test_stopped_agent_goes_silent_but_its_routers_keep_forwarding(
    small: Emulator, api: Http
) -> None:
    small.advance(5)
    routers = hosted_by(small, "net-1")
    before = agent(api, "net-1")
    small.faults.stop_agent("net-1")
    small.advance(120)
    stopped = agent(api, "net-1")
    assert stopped["alive"] is False
    assert stopped["heartbeat_timestamp"] == before["heartbeat_timestamp"]
    assert stopped["started_at"] == before["started_at"]
    plane = small.dataplane()
    assert routers and all(plane[r]["reachable"] for r in routers)
    state = next(a for a in small.state()["agents"] if a["host"] == "net-1")
    assert state["stopped"] is True and state["running"] is True


def test_kill_differs_the_node_stops_forwarding(small: Emulator) -> None:
    small.advance(5)
    routers = hosted_by(small, "net-2")
    small.faults.kill_agent("net-2")
    plane = small.dataplane()
    assert routers and not any(
        plane[r]["reachable"] for r in routers if not small.world.routers[r].ha
    )


def test_started_agent_reports_a_new_started_at_and_resyncs(small: Emulator, api: Http) -> None:
    small.advance(5)
    before = agent(api, "net-1")
    small.faults.stop_agent("net-1")
    small.advance(100)
    small.faults.start_agent("net-1")
    after = agent(api, "net-1")
    assert after["alive"] is True
    assert after["started_at"] != before["started_at"]
    assert after["heartbeat_timestamp"] == after["started_at"]
    small.advance(31)
    assert agent(api, "net-1")["heartbeat_timestamp"] > after["heartbeat_timestamp"]


def test_router_unbound_while_stopped_stays_until_the_agent_resyncs(
    small: Emulator, api: Http
) -> None:
    small.advance(5)
    router = next(r for r in hosted_by(small, "net-1") if not small.world.routers[r].ha)
    net1, net3 = api.agent_id("net-1"), api.agent_id("net-3")
    small.faults.stop_agent("net-1")
    assert api.call("DELETE", f"/v2.0/agents/{net1}/l3-routers/{router}")[0] == 204
    assert api.call("POST", f"/v2.0/agents/{net3}/l3-routers", {"router_id": router})[0] == 201
    small.advance(10)  # net-3 runs it too: two copies of a legacy router clash
    assert small.dataplane()[router]["reachable"] is False
    small.faults.start_agent("net-1")  # the resync removes the stale copy
    small.advance(1)
    assert small.dataplane()[router]["reachable"] is True


def test_agent_started_during_a_broker_outage_reports_nothing_until_it_ends(
    clock: ManualClock,
) -> None:
    with make(clock, agents=3, routers=6) as emu:
        api = Http(emu)
        emu.advance(5)
        before = agent(api, "net-2")
        emu.faults.stop_agent("net-2")
        emu.faults.broker_outage(200)
        emu.advance(10)
        emu.faults.start_agent("net-2")
        emu.advance(150)
        silent = agent(api, "net-2")
        assert silent["heartbeat_timestamp"] == before["heartbeat_timestamp"]
        assert silent["started_at"] == before["started_at"]
        assert silent["alive"] is False
        emu.advance(60)  # the bus is back: the start report arrives
        back = agent(api, "net-2")
        assert back["alive"] is True and back["started_at"] != before["started_at"]


def test_stop_and_start_are_faults_of_the_cli_and_the_endpoint(small: Emulator, api: Http) -> None:
    assert fault_from_words(["stop-agent", "net-1"]).args == {"host": "net-1"}
    status, doc, _ = api.call("POST", "/_emulator/faults", {"fault": "stop-agent", "host": "net-4"})
    assert status == 200 and doc == {"fault": "stop-agent", "host": "net-4"}
    assert small.world.agents_by_host["net-4"].stopped is True
    status, _, _ = api.call("POST", "/_emulator/faults", {"fault": "start-agent", "host": "net-9"})
    assert status == 404
    small.faults.start_agent("net-4")
    assert small.world.agents_by_host["net-4"].stopped is False


def test_stop_and_start_run_as_scenario_steps(clock: ManualClock) -> None:
    from l3ha.emulator.faults import parse_scenario

    with make(clock, agents=2, routers=4) as emu:
        api = Http(emu)
        emu.schedule_scenario(
            parse_scenario(
                [
                    {"at": 5, "fault": "stop-agent", "host": "net-1"},
                    {"at": 100, "fault": "start-agent", "host": "net-1"},
                ]
            )
        )
        before = agent(api, "net-1")
        emu.advance(90)
        assert agent(api, "net-1")["alive"] is False
        emu.advance(20)
        after = agent(api, "net-1")
        assert after["alive"] is True and after["started_at"] != before["started_at"]


def test_stopping_a_hosts_dhcp_agent_keeps_its_networks_served(clock: ManualClock) -> None:
    with make(clock, agents=2, routers=2, dhcp_agents=2, networks=6) as emu:
        api = Http(emu)
        emu.advance(10)
        dhcp = emu.world.dhcp.agents_by_host["net-1"]
        l3 = emu.world.agents_by_host["net-1"]
        before = dhcp.started_at
        assert emu.world.dhcp.networks_of(dhcp)
        emu.faults.stop_agent("net-1")  # the default: the L3 agent only
        assert l3.stopped and not dhcp.stopped
        emu.faults.start_agent("net-1")
        status, _, _ = api.call(
            "POST", "/_emulator/faults", {"fault": "stop-agent", "host": "net-1", "agents": "x"}
        )
        assert status == 400
        emu.faults.stop_agent("net-1", agents="all")
        assert l3.stopped and dhcp.stopped
        emu.advance(120)
        assert not emu.sim.is_alive(dhcp)
        assert emu.state()["dhcp"]["unserved"] == 0  # dnsmasq goes on serving
        emu.faults.start_agent("net-1", agents="dhcp")
        assert l3.stopped and not dhcp.stopped
        assert emu.sim.is_alive(dhcp) and dhcp.started_at != before
        emu.faults.stop_agent(dhcp.id)  # by agent id: that agent only
        assert dhcp.stopped
