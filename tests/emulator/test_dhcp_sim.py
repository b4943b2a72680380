"""The simulated DHCP agents: node fate, resyncs, stale copies and Neutron's DHCP failover."""

from __future__ import annotations

from datetime import timedelta

from l3ha.clock import ManualClock
from l3ha.emulator import Emulator
from l3ha.emulator.dhcp_world import RESERVED_DEVICE_ID
from l3ha.emulator.records import AgentRec

from .conftest import make


def dhcp_agent(emu: Emulator, host: str) -> AgentRec:
    return emu.world.dhcp.agents_by_host[host]


def placement(emu: Emulator) -> dict[str, list[str]]:
    """Network name -> hosts of its DHCP agents."""
    tables = emu.world.dhcp
    return {
        n.name: sorted(b.agent.host for b in tables.bindings_of(n.id).values())
        for n in tables.tenant_networks.values()
    }


def active_port_hosts(emu: Emulator, network_name: str) -> list[str]:
    tables = emu.world.dhcp
    net = next(n for n in tables.tenant_networks.values() if n.name == network_name)
    return sorted(
        p.host
        for p in tables.ports_by_network[net.id]
        if p.status == "ACTIVE" and p.device_id != RESERVED_DEVICE_ID
    )


def test_kill_agent_takes_the_nodes_l3_and_dhcp_agents_down_and_revive_brings_both(
    clock: ManualClock,
) -> None:
    with make(clock, agents=3, routers=3, dhcp_agents=3, networks=6) as emu:
        emu.faults.kill_agent("net-2")
        emu.advance(emu.cfg.agent_down_time + emu.cfg.report_interval)
        now = emu.clock.wall()
        assert not emu.sim.is_alive(emu.world.agents_by_host["net-2"], now)
        assert not emu.sim.is_alive(dhcp_agent(emu, "net-2"), now)
        assert emu.state()["dhcp"]["unserved"] == 2
        assert emu.sim.is_alive(dhcp_agent(emu, "net-1"), now)
        emu.faults.revive_agent("net-2")
        emu.advance(3 * emu.cfg.dhcp_network_time)
        assert emu.sim.is_alive(dhcp_agent(emu, "net-2"), emu.clock.wall())
        assert emu.state()["dhcp"]["unserved"] == 0


def test_a_dhcp_only_node_is_found_by_its_host(clock: ManualClock) -> None:
    with make(clock, agents=2, routers=2, dhcp_agents=3, networks=3) as emu:
        emu.faults.kill_agent("net-3")  # no L3 agent on net-3
        assert not dhcp_agent(emu, "net-3").running
        assert emu.world.agents_by_host["net-1"].running


def test_separate_dhcp_hosts_do_not_share_the_l3_nodes_fate(clock: ManualClock) -> None:
    with make(
        clock, agents=2, routers=2, dhcp_agents=2, networks=2, dhcp_host_prefix="dhcp"
    ) as emu:
        emu.faults.kill_agent("net-1")
        assert dhcp_agent(emu, "dhcp-1").running
        assert sorted(emu.world.dhcp.agents_by_host) == ["dhcp-1", "dhcp-2"]


def test_cut_off_agent_keeps_serving_a_removed_network_until_it_resyncs(
    clock: ManualClock,
) -> None:
    with make(clock, agents=2, routers=2, dhcp_agents=2, networks=2) as emu:
        agent = dhcp_agent(emu, "net-1")
        (net_id,) = list(emu.world.dhcp.networks_of(agent))
        net = emu.world.networks[net_id]
        emu.sim.dhcp.add(net, dhcp_agent(emu, "net-2"))  # moved: net-2 first, then net-1 off
        emu.advance(emu.cfg.dhcp_network_time)
        emu.faults.mgmt_partition("net-1", 20)
        emu.sim.dhcp.remove(net, agent)
        port = next(p for p in emu.world.dhcp.ports_by_network[net_id] if p.host == "net-1")
        assert (port.device_id, port.status) == (RESERVED_DEVICE_ID, "ACTIVE")
        assert net_id in emu.world.dhcp.work[agent.id].stale
        emu.advance(21)
        assert net_id not in emu.world.dhcp.work[agent.id].stale
        assert port.status == "DOWN"


def test_network_added_while_cut_off_is_set_up_at_reconnection(clock: ManualClock) -> None:
    with make(clock, agents=2, routers=2, dhcp_agents=2, networks=2) as emu:
        agent = dhcp_agent(emu, "net-2")
        net = emu.world.networks[next(iter(emu.world.dhcp.networks_of(dhcp_agent(emu, "net-1"))))]
        emu.faults.mgmt_partition("net-2", 20)
        emu.sim.dhcp.add(net, agent)
        emu.advance(10)
        assert active_port_hosts(emu, net.name) == ["net-1"]
        emu.advance(10 + 2 * emu.cfg.dhcp_network_time)
        assert active_port_hosts(emu, net.name) == ["net-1", "net-2"]


def test_resync_auto_schedules_an_unhosted_network_to_the_agent(clock: ManualClock) -> None:
    with make(clock, agents=2, routers=2, dhcp_agents=2, networks=2) as emu:
        first = dhcp_agent(emu, "net-1")
        (net_id,) = list(emu.world.dhcp.networks_of(first))
        emu.sim.dhcp.remove(emu.world.networks[net_id], first)
        emu.faults.mgmt_partition("net-2", 1)  # net-2 reconnects and does a full resync
        emu.advance(2 + emu.cfg.dhcp_network_time)
        assert placement(emu)["tenant-net-0001"] == ["net-2"]
        assert emu.sim.dhcp.auto_scheduled == 1


def test_auto_failover_moves_a_dead_nodes_networks_after_the_dead_limit(
    clock: ManualClock,
) -> None:
    with make(
        clock, agents=4, routers=4, dhcp_agents=4, networks=12, neutron_auto_failover=True
    ) as emu:
        emu.faults.kill_agent("net-4")
        emu.advance(emu.cfg.agent_down_time * 1.5)  # dead, but not for 2 x agent_down_time
        assert emu.sim.dhcp_failover.removed == 0
        emu.advance(emu.cfg.agent_down_time * 2)
        counters = emu.sim.dhcp_failover.counters()
        assert counters["removed"] == 3 and counters["moves"] == 3
        emu.advance(3 * emu.cfg.dhcp_network_time)
        for name, hosts in placement(emu).items():
            assert hosts and "net-4" not in hosts
            assert active_port_hosts(emu, name) == hosts
        dhcp = emu.state()["dhcp"]  # the dead node's ports were reserved, then claimed
        assert (dhcp["ports"], dhcp["ports_reserved"], dhcp["ports_active"]) == (12, 0, 12)


def test_auto_failover_skips_when_no_dhcp_agent_is_alive(clock: ManualClock) -> None:
    with make(
        clock, agents=3, routers=3, dhcp_agents=3, networks=6, neutron_auto_failover=True
    ) as emu:
        before = placement(emu)
        emu.faults.broker_outage(600)
        emu.advance(590)
        counters = emu.sim.dhcp_failover.counters()
        assert counters["skipped"] >= 1 and counters["removed"] == 0
        assert placement(emu) == before


def test_staggered_reconnection_lets_neutron_move_networks_off_agents_still_cut_off(
    clock: ManualClock,
) -> None:
    with make(
        clock, agents=4, routers=4, dhcp_agents=4, networks=40, neutron_auto_failover=True, seed=1
    ) as emu:
        emu.sim.lifecycle.broker_outage(300, spread=200)
        agents = sorted(emu.sim.dhcp.agents(), key=lambda a: a.broker_until)
        first, second = agents[0], agents[1]
        assert second.broker_until - first.broker_until > emu.sim.dhcp_failover.interval
        emu.advance(first.broker_until - emu.clock.monotonic() + emu.sim.dhcp_failover.interval)
        assert emu.sim.dhcp_failover.moves > 0  # one DHCP agent is back: the guard passes
        assert len(emu.world.dhcp.networks_of(first)) > 10  # the least reported load wins
        emu.advance(300)
        assert emu.state()["dhcp"]["unserved"] == 0
        assert all(hosts for hosts in placement(emu).values())


def test_a_just_revived_agent_is_given_its_start_up_grace(clock: ManualClock) -> None:
    with make(clock, agents=2, routers=2, dhcp_agents=2, networks=4) as emu:
        agent = dhcp_agent(emu, "net-2")
        emu.faults.kill_agent("net-2")
        emu.advance(emu.cfg.agent_down_time + emu.cfg.report_interval)
        with emu.world.lock:
            agent.heartbeat -= timedelta(seconds=1000)
            agent.started_at = emu.clock.wall() - timedelta(seconds=10)
            emu.sim.dhcp_failover.run_once(dead_limit=100)  # started 10 s ago: grace
        assert emu.sim.dhcp_failover.removed == 0
        with emu.world.lock:
            agent.started_at = emu.clock.wall() - timedelta(seconds=500)
            emu.sim.dhcp_failover.run_once(dead_limit=100)
        emu.advance(5)
        assert emu.sim.dhcp_failover.removed == 2
        assert all(hosts == ["net-1"] for hosts in placement(emu).values())
