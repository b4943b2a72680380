"""The management path: cut-off agents keep their routers, miss new ones, resync on return.

Also the staggered broker outage, the RPC-first processing order and the HA report timing.
"""

from __future__ import annotations

import pytest

from l3ha.clock import ManualClock
from l3ha.emulator import Emulator
from l3ha.emulator.faults import fault_from_words

from .conftest import Http, make


def rid(emu: Emulator, name: str) -> str:
    return next(r.id for r in emu.world.routers.values() if r.name == name)


def move(emu: Emulator, name: str, source: str, target: str) -> str:
    api, router = Http(emu), rid(emu, name)
    assert api.call("DELETE", f"/v2.0/agents/{api.agent_id(source)}/l3-routers/{router}")[0] == 204
    reply = api.call("POST", f"/v2.0/agents/{api.agent_id(target)}/l3-routers",
                     {"router_id": router})
    assert reply[0] == 201
    return router


def reachable(emu: Emulator, router: str) -> bool:
    return bool(emu.dataplane()[router]["reachable"])


@pytest.fixture
def two(clock: ManualClock) -> Emulator:
    with make(clock, agents=2, routers=4, router_base_time=1.0, router_port_time=0.0) as emu:
        yield emu


def test_move_off_a_partitioned_forwarding_agent_duplicates_until_it_resyncs(
    two: Emulator,
) -> None:
    two.faults.mgmt_partition("net-1", 300)
    router = move(two, "router-0001", "net-1", "net-2")
    assert reachable(two, router)  # only the stale copy on net-1 forwards so far
    two.advance(1.1)  # net-2 has set it up: the gateway address is on two nodes
    assert not reachable(two, router)
    assert two.state()["duplicated"] == 1
    assert [a["stale_routers"] for a in two.state()["agents"]] == [1, 0]
    two.advance(297)
    assert not reachable(two, router)
    two.advance(2)  # net-1 reconnects and its full resync removes the stale copy
    assert reachable(two, router)
    assert two.state()["duplicated"] == 0
    assert two.dataplane()[router]["downtime_s"] == pytest.approx(299.0, abs=0.01)


def test_move_onto_a_cut_off_agent_forwards_only_after_it_reconnects(two: Emulator) -> None:
    two.faults.mgmt_partition("net-2", 100)
    router = move(two, "router-0001", "net-1", "net-2")
    assert not reachable(two, router)  # net-1 dropped it; net-2 never heard of it
    two.advance(99)
    assert not reachable(two, router)
    two.advance(1.5)  # reconnected at 100: full resync, processing takes 1 s
    assert not reachable(two, router)
    two.advance(0.6)
    assert reachable(two, router)


def test_during_a_broker_outage_agents_neither_drop_nor_pick_up_routers(two: Emulator) -> None:
    two.faults.broker_outage(60)
    router = move(two, "router-0001", "net-1", "net-2")
    two.advance(59)
    assert reachable(two, router)  # net-1 still runs its copy; net-2 has not set it up
    assert two.world.agents_by_host["net-1"].stale
    two.advance(1.5)  # both resync: net-1 drops it, net-2 processes it (1 s)
    assert not two.world.agents_by_host["net-1"].stale
    assert not reachable(two, router)
    two.advance(0.6)
    assert reachable(two, router)
    assert two.dataplane()[router]["downtime_s"] == pytest.approx(1.0, abs=0.01)


def test_rebinding_to_the_partitioned_agent_keeps_its_copy_forwarding(two: Emulator) -> None:
    two.faults.mgmt_partition("net-1", 300)
    router = rid(two, "router-0001")
    api = Http(two)
    net1 = api.agent_id("net-1")
    api.call("DELETE", f"/v2.0/agents/{net1}/l3-routers/{router}")
    api.call("POST", f"/v2.0/agents/{net1}/l3-routers", {"router_id": router})
    assert reachable(two, router)
    two.advance(301)
    assert reachable(two, router) and two.dataplane()[router]["downtime_s"] == 0


def test_broker_outage_spread_brings_agents_back_one_by_one_in_a_seeded_order(
    clock: ManualClock,
) -> None:
    with make(clock, agents=4, routers=4, seed=7) as emu:
        api = Http(emu)
        order = emu.sim.lifecycle.broker_outage(200, spread=30)
        assert sorted(order) == ["net-1", "net-2", "net-3", "net-4"]
        for n, step in enumerate([200.5, 10, 10, 10]):  # back at 200, 210, 220, 230
            emu.advance(step)
            alive = {a["host"] for a in api.get("/v2.0/agents")[1]["agents"] if a["alive"]}
            assert alive == set(order[:n + 1]), n
    with make(ManualClock(), agents=4, routers=4, seed=7) as again:
        assert again.sim.lifecycle.broker_outage(200, spread=30) == order
    orders = set()
    for seed in range(5):
        with make(ManualClock(), agents=4, routers=4, seed=seed) as other:
            orders.add(tuple(other.sim.lifecycle.broker_outage(10, spread=5)))
    assert len(orders) > 1


def test_broker_outage_spread_as_fault_words_and_endpoint(small: Emulator, api: Http) -> None:
    assert fault_from_words(["broker-outage", "30", "20"]).args == {"seconds": 30.0,
                                                                    "spread": 20.0}
    assert fault_from_words(["broker-outage", "30"]).args == {"seconds": 30.0}
    status, doc, _ = api.call("POST", "/_emulator/faults",
                              {"fault": "broker-outage", "seconds": 100, "spread": 50})
    assert status == 200 and doc == {"fault": "broker-outage", "seconds": 100.0, "spread": 50.0}
    small.advance(99)
    assert small.state()["broker_outage"] is True
    small.advance(52)
    assert small.state()["broker_outage"] is False


def test_rpc_added_routers_are_processed_ahead_of_the_full_resync(clock: ManualClock) -> None:
    with make(clock, agents=2, routers=20, agent_concurrency=1, router_base_time=1.0,
              router_port_time=0.0) as emu:
        emu.faults.kill_agent("net-1")
        emu.advance(5)
        emu.faults.revive_agent("net-1")  # 10 routers to resync, one at a time, 1 s each
        router = move(emu, "router-0002", "net-2", "net-1")
        emu.advance(1.9)
        assert not reachable(emu, router)
        emu.advance(0.2)  # right after the one resync router already in progress
        assert reachable(emu, router)
        assert emu.state()["agents"][0]["queued"] == 8  # 10 - the first - the one now running


def test_a_new_primary_shows_after_the_advert_interval_and_batches(clock: ManualClock) -> None:
    with make(clock, agents=3, routers=3, ha_routers=3, ha_replicas=3) as emu:
        api = Http(emu)

        def state_on(name: str, host: str) -> str:
            agents = api.get(f"/v2.0/routers/{rid(emu, name)}/l3-agents")[1]["agents"]
            return next(a["ha_state"] for a in agents if a["host"] == host)

        emu.faults.kill_agent("net-1")  # router-0001: net-2 takes over at 7 s
        emu.advance(1.5)
        emu.faults.kill_agent("net-3")  # router-0003: net-2 takes over at 8.5 s
        emu.advance(7.4)
        assert state_on("router-0001", "net-2") == "standby"
        emu.advance(0.2)  # 9.1: reported 2 s after the takeover; notifier busy until 11
        assert state_on("router-0001", "net-2") == "active"
        emu.advance(1.7)  # 10.8: router-0003's report waits for the batch
        assert state_on("router-0003", "net-2") == "standby"
        emu.advance(0.3)  # 11.1: sent with the next batch, 2.5 s after its takeover
        assert state_on("router-0003", "net-2") == "active"


def test_dead_replicas_already_unknown_do_not_count_as_all_dead(clock: ManualClock) -> None:
    with make(clock, agents=3, routers=3, ha_routers=1) as emu:
        api = Http(emu)
        router = rid(emu, "router-0001")  # net-1 active, net-2 standby

        def states() -> dict[str, str]:
            agents = api.get(f"/v2.0/routers/{router}/l3-agents")[1]["agents"]
            return {a["host"]: a["ha_state"] for a in agents}

        emu.faults.kill_agent("net-1")
        emu.faults.kill_agent("net-2")
        emu.advance(120)
        assert states() == {"net-1": "unknown", "net-2": "standby"}
        emu.faults.revive_agent("net-2")
        emu.advance(30)
        assert states() == {"net-1": "unknown", "net-2": "active"}
        emu.faults.kill_agent("net-2")
        emu.advance(120)
        # neutron counts dead active and dead standby replicas only: 1 of 2 -> standby
        assert states() == {"net-1": "unknown", "net-2": "standby"}
