"""Builds the initial DHCP side of an emulated cloud: tenant networks, bindings, ports. Pure.

Network ``tenant-net-NNNN`` (i from 0) has one DHCP subnet ``100.(64+i/256).(i%256).0/24``
and is bound to ``dhcp_agents_per_network`` consecutive DHCP agents starting at agent
``i mod D`` (consecutive agents sit in different AZs); every binding is already set up
and its DHCP port ACTIVE, and every agent's first state report is already in.
"""

from __future__ import annotations

from datetime import datetime

from l3ha.emulator.config import EmulatorConfig
from l3ha.emulator.records import DHCP_AGENT
from l3ha.emulator.world import World


def add_tenant_networks(world: World, cfg: EmulatorConfig, now: datetime) -> None:
    agents = [a for a in world.agents.values() if a.agent_type == DHCP_AGENT]
    tables = world.dhcp
    for i in range(cfg.networks):
        net = world.add_network(
            f"tenant-net-{i + 1:04d}", f"100.{64 + (i >> 8)}.{i & 255}", False, now
        )
        tables.add_dhcp_network(net)
        count = min(cfg.dhcp_agents_per_network, len(agents))
        for k in range(count):
            agent = agents[(i + k) % len(agents)]
            binding = tables.bind(net, agent)
            binding.processed = True
            tables.work[agent.id].serving.add(net.id)
            port = world.add_dhcp_port(net, f"{net.cidr_base}.{2 + k}", agent.host, now)
            port.status = "ACTIVE"
    for agent in agents:
        tables.reported(agent)
