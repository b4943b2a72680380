"""The l3ha emulator as a contract backend; serves HTTP on loopback from this process.

The emulator runs on a ManualClock: "kill an agent" stops its heartbeats and then
advances simulated time past ``agent_down_time``, so the agent reads dead at once
without the test sleeping. Agents are built up front (``net-1..net-N`` legacy,
``snat-*`` dvr_snat, ``compute-1`` dvr, DHCP agents on nodes of their own ``dhcp-1..``)
and handed out one per request, so every test owns the agents it changes.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta
from typing import Any

from tests.contract.contract_http import Api
from tests.contract.contract_neutron import FAILOVER_DEAD_LIMIT_S, AgentRef

LEGACY_AGENTS = 120
DHCP_AGENTS = 40
# Simulated seconds for a bound HA router's replicas to be processed and elect an active.
HA_SETTLE_S = 60.0
# Simulated seconds ``cut_off`` keeps an agent off the bus (well below agent_down_time).
HOLD_S = 30.0
# Simulated seconds a failover pass over a test's few routers takes (each move blocks
# neutron_move_time on its RPC).
FAILOVER_SETTLE_S = 10.0


class EmulatorBackend:
    """The contract suite's view of an in-process emulator."""

    name = "emulator"

    def __init__(self, emulator: Any, running: contextlib.ExitStack) -> None:
        self.emulator = emulator
        self._running = running  # stops the emulator
        self.url: str = emulator.url
        self.api = Api(self.url)
        self._ids: dict[str, str] = emulator.agent_ids_by_host()
        self._unused = {
            "legacy": [f"net-{n}" for n in range(1, LEGACY_AGENTS + 1)],
            "dvr_snat": sorted(host for host in self._ids if host.startswith("snat-")),
            "dhcp": [f"dhcp-{n}" for n in range(1, DHCP_AGENTS + 1)],
        }

    @classmethod
    def start(cls) -> EmulatorBackend:
        from l3ha.emulator.testing import Clocking, emulated_cloud

        running = contextlib.ExitStack()
        cloud = running.enter_context(
            emulated_cloud(
                Clocking.MANUAL,
                agents=LEGACY_AGENTS,
                routers=1,
                dvr_routers=1,
                dhcp_agents=DHCP_AGENTS,
                dhcp_host_prefix="dhcp",
            )
        )
        assert cloud.emulator is not None
        return cls(cloud.emulator, running)

    def stop(self) -> None:
        self._running.close()

    def new_agent(self, mode: str = "legacy") -> AgentRef:
        """An agent no other test has used (the one dvr agent is shared: tests only read it)."""
        if mode == "dvr":
            return AgentRef(id=self._ids["compute-1"], host="compute-1")
        unused = self._unused[mode]
        if not unused:
            raise AssertionError(f"the emulator has no unused {mode} agent left")
        host = unused.pop(0)
        return AgentRef(id=self._ids[host], host=host)

    def new_dhcp_agent(self) -> AgentRef:
        """A DHCP agent no other test has used, alone on its node."""
        return self.new_agent("dhcp")

    def dhcp_setup(self, agent: AgentRef, network_id: str) -> None:
        """Let the DHCP agent set the network up (its port claimed or created)."""
        self.emulator.advance(self.emulator.cfg.dhcp_network_time + 1.0)

    def dhcp_failover_pass(self) -> None:
        """One pass of the modelled DHCP network check, now; time passes until it is done."""
        with self.emulator.world.lock:
            self.emulator.sim.dhcp_failover.run_once(FAILOVER_DEAD_LIMIT_S)
        self.emulator.advance(FAILOVER_SETTLE_S)

    def kill_agent(self, agent: AgentRef) -> None:
        """Stop the agent and let simulated time pass until its heartbeat is stale."""
        self.emulator.faults.kill_agent(agent.host)
        config = self.emulator.cfg
        self.emulator.advance(config.agent_down_time + config.report_interval)

    def kill_agents(self, agents: list[AgentRef]) -> None:
        """Several agents dead at once: all stop, then time passes once."""
        for agent in agents:
            self.emulator.faults.kill_agent(agent.host)
        config = self.emulator.cfg
        self.emulator.advance(config.agent_down_time + config.report_interval)

    def long_dead(self, agent: AgentRef) -> None:
        """Kill the agent and date its last heartbeat past a failover pass's dead limit."""
        self.kill_agent(agent)
        with self.emulator.world.lock:
            record = self.emulator.world.agents[agent.id]
            record.heartbeat -= timedelta(seconds=2 * FAILOVER_DEAD_LIMIT_S)
            record.started_at -= timedelta(seconds=2 * FAILOVER_DEAD_LIMIT_S)

    def failover_pass(self) -> None:
        """One pass of the modelled periodic rescheduler, now; time passes until it is done."""
        with self.emulator.world.lock:
            self.emulator.sim.failover.run_once(FAILOVER_DEAD_LIMIT_S)
        self.emulator.advance(FAILOVER_SETTLE_S)

    def settle_ha(self, router_id: str) -> str:
        """Let the replicas be processed and VRRP elect; return the active agent's id."""
        self.emulator.advance(HA_SETTLE_S)
        hosting = self.api.get(f"/v2.0/routers/{router_id}/l3-agents").json()["agents"]
        active = [agent["id"] for agent in hosting if agent["ha_state"] == "active"]
        if len(active) != 1:
            raise AssertionError(f"HA router {router_id} did not elect one active: {hosting}")
        return str(active[0])

    def settle_ha_live(self, router_id: str) -> None:
        """Let replicas on live agents be processed, elect and report."""
        self.emulator.advance(HA_SETTLE_S)

    def cut_off(self, agent: AgentRef) -> None:
        """Cut the agent off the bus: it misses router_added_to_agent until it resyncs."""
        self.emulator.faults.mgmt_partition(agent.host, HOLD_S)

    def full_resync(self, agent: AgentRef) -> list[str]:
        """End (or make) a short partition: the agent reconnects and does a full resync."""
        self.emulator.faults.mgmt_partition(agent.host, 0.5)
        self.emulator.advance(HOLD_S + 1.0)
        routers = self.api.get(f"/v2.0/agents/{agent.id}/l3-routers").json()["routers"]
        return [str(r["id"]) for r in routers]

    def revive_agent(self, agent: AgentRef) -> None:
        self.emulator.advance(1.0)
        self.emulator.faults.revive_agent(agent.host)

    def set_admin_state(self, agent: AgentRef, up: bool) -> None:
        reply = self.api.put(f"/v2.0/agents/{agent.id}", {"agent": {"admin_state_up": up}})
        if reply.status != 200:
            raise AssertionError(f"admin state of {agent.host}: {reply.status} {reply.text}")

    def router_with_usage(self, interfaces: int, floating_ips: int) -> str:
        """A router with ``interfaces`` interface ports and ``floating_ips`` floating IPs, put
        into the emulated world directly (the emulator has no API to create networks)."""
        from l3ha.emulator.records import OWNER_GATEWAY, OWNER_INTERFACE

        emu = self.emulator
        with emu.world.lock:
            world, now = emu.world, emu.clock.wall()
            number = len(world.routers) + 1
            base = f"10.250.{number % 256}"
            net = world.add_network(f"contract-usage-{number}", base, False, now)
            router = world.add_router(f"contract-usage-{number}", net, now)
            world.add_port(router, emu.public, world.new_public_ip(), OWNER_GATEWAY, now)
            for index in range(interfaces):
                world.add_port(router, net, f"{base}.{1 + index}", OWNER_INTERFACE, now)
            for index in range(floating_ips):
                world.add_fip(router, f"{base}.{100 + index}", now)
            return router.id
