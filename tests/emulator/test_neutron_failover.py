"""Neutron's automatic failover as neutron 29 runs it: rollback, aborted passes, timing."""

from __future__ import annotations

from l3ha.clock import ManualClock
from l3ha.emulator import Emulator

from .conftest import make


def placement(emu: Emulator) -> dict[str, list[str]]:
    """Router name -> hosts of its bindings."""
    return {r.name: sorted(rep.agent.host for rep in r.bindings.values())
            for r in emu.world.routers.values()}


def down_order(emu: Emulator, host: str) -> list[str]:
    """The routers of ``host`` in the order neutron walks its down bindings (router id)."""
    agent = emu.world.agents_by_host[host]
    return [r.name for r in sorted(agent.routers.values(), key=lambda r: r.id)]


def test_broker_outage_with_every_agent_dead_leaves_every_router_on_its_agent(
    clock: ManualClock,
) -> None:
    with make(clock, agents=3, routers=30, neutron_auto_failover=True) as emu:
        before = placement(emu)
        emu.faults.broker_outage(600)
        emu.advance(590)
        counters = emu.sim.failover.counters()
        assert counters["passes"] >= 10
        assert counters["failed"] >= 30  # RouterReschedulingFailed, rolled back
        assert counters["moves"] == 0
        assert placement(emu) == before
        state = emu.state()
        assert state["unhosted"] == 0 and state["unreachable"] == 0


def test_staggered_reconnection_piles_routers_onto_the_first_agents_back(
    clock: ManualClock,
) -> None:
    with make(clock, agents=4, routers=40, neutron_auto_failover=True, seed=1) as emu:
        order = emu.sim.lifecycle.broker_outage(300, spread=200)
        first, last = order[0], order[-1]
        emu.advance(300 + 50)  # the first agent is back; the others still read dead
        moved = emu.sim.failover.moves
        assert moved > 0
        assert emu.state()["unhosted"] == 0
        assert len(emu.world.agents_by_host[first].routers) > 10 + moved // 2
        # a router moved off an agent that is cut off but forwarding runs twice: unreachable
        assert emu.state()["duplicated"] > 0
        assert emu.state()["unreachable"] >= emu.state()["duplicated"]
        emu.advance(200 + 30)  # everybody reconnected and resynced
        state = emu.state()
        assert state["duplicated"] == 0 and state["unhosted"] == 0
        assert state["unreachable"] == 0
        assert not emu.world.agents_by_host[last].routers  # it came back to an empty node


def test_an_ha_binding_ends_the_pass_so_later_routers_never_move(clock: ManualClock) -> None:
    with make(clock, agents=3, routers=21, ha_routers=3, seed=2,
              neutron_auto_failover=True) as emu:
        order = down_order(emu, "net-1")
        ha = {r.name for r in emu.world.routers.values() if r.ha}
        first_ha = next(i for i, name in enumerate(order) if name in ha)
        assert first_ha == 3 and len(order) == 8  # L L L H H L L L
        emu.faults.kill_agent("net-1")
        emu.advance(600)  # many passes
        stays = {name for name, hosts in placement(emu).items() if "net-1" in hosts}
        assert stays == set(order[first_ha:])
        counters = emu.sim.failover.counters()
        assert counters["moves"] == first_ha
        assert counters["aborted"] >= 8  # every pass since net-1 read dead ended there


def test_an_ha_binding_first_blocks_every_move(clock: ManualClock) -> None:
    with make(clock, agents=3, routers=21, ha_routers=3, seed=0,
              neutron_auto_failover=True) as emu:
        assert down_order(emu, "net-1")[0] == "router-0001"  # HA, ahead of six legacy
        before = placement(emu)
        emu.faults.kill_agent("net-1")
        emu.advance(400)
        assert placement(emu) == before
        assert emu.sim.failover.moves == 0 and emu.sim.failover.aborted >= 2


def test_each_move_blocks_the_pass_and_a_long_pass_makes_the_next_wait(
    clock: ManualClock,
) -> None:
    with make(clock, agents=2, routers=16, agent_down_time=10, report_interval=3,
              neutron_auto_failover=True, neutron_move_time=4.0) as emu:
        failover = emu.sim.failover
        assert failover.interval == 5 and failover.dead_limit == 20
        emu.faults.kill_agent("net-1")
        while failover.moves == 0:
            emu.advance(0.5)
        start = failover.pass_starts[-1]
        emu.advance(start + 4.0 * 3 + 0.1 - clock.monotonic())
        assert failover.moves == 4  # one move per 4 s of blocking RPC
        emu.advance(start + 4.0 * 8 + 1 - clock.monotonic())
        assert failover.moves == 8 and failover.passes == len(failover.pass_starts)
        # the 32 s pass outlasted agent_down_time: the next one sleeps 2 x agent_down_time
        assert failover.waits == 1
        emu.advance(18)
        assert failover.pass_starts[-1] == start
        emu.advance(2)
        assert failover.pass_starts[-1] == start + 32 + 20


def test_an_agent_back_online_is_skipped_for_the_rest_of_the_pass(clock: ManualClock) -> None:
    with make(clock, agents=3, routers=12, agent_down_time=10, report_interval=3,
              neutron_auto_failover=True, neutron_move_time=4.0, seed=4) as emu:
        failover = emu.sim.failover
        first_host = {r.id: next(iter(r.bindings.values())).agent.host
                      for r in emu.world.routers.values()}
        walk = sorted((rid, host) for rid, host in first_host.items()
                      if host in ("net-1", "net-2"))
        emu.faults.kill_agent("net-1")
        emu.faults.kill_agent("net-2")
        while failover.moves == 0:
            emu.advance(0.5)
        emu.advance(5.0)  # two moves done; the walk goes on at +8 s
        emu.faults.revive_agent("net-2")
        emu.advance(60)
        moved_net2 = [rid for rid, host in walk[:2] if host == "net-2"]
        kept = {rid for rid, host in walk[2:] if host == "net-2"}
        net2 = set(emu.world.agents_by_host["net-2"].routers)
        assert kept <= net2 and not set(moved_net2) & net2
        assert not emu.world.agents_by_host["net-1"].routers  # net-1 stays dead: all moved


def test_a_move_onto_an_agent_that_cannot_receive_times_out_and_unhosts(
    clock: ManualClock,
) -> None:
    with make(clock, agents=2, routers=2, neutron_auto_failover=True) as emu:
        failover = emu.sim.failover
        emu.faults.kill_agent("net-1")
        emu.advance(150)
        emu.faults.mgmt_partition("net-2", 400)  # still alive for the server for up to 75 s
        while not failover.timed_out:
            emu.advance(1)
        rid = next(r.id for r in emu.world.routers.values() if r.name == "router-0001")
        assert [a.agent.host for a in emu.world.routers[rid].bindings.values()] == ["net-2"]
        emu.advance(118)
        assert emu.world.routers[rid].bindings  # the RPC call still blocks
        emu.advance(3)
        assert not emu.world.routers[rid].bindings  # given up: the router has no agent
        assert failover.moves == 0
