"""Builds the initial emulated cloud from an ``EmulatorConfig``. Pure.

Layout (deterministic for a seed):
- L3 agents ``net-1``..``net-N`` in ``legacy`` mode, AZs ``az1``..``azK`` round-robin.
- With DVR routers, extra agents: ``snat-1``..``snat-M`` in ``dvr_snat`` mode
  (M = max(2, azs), AZs round-robin) host the DVR routers' SNAT part, and one
  ``compute-1`` agent in ``dvr`` mode stands for the compute nodes (no router
  may be bound to it by hand, as in Neutron).
- ``dhcp_agents`` DHCP agents on ``net-1``, ``net-2``, ... (``dhcp_host_prefix``; by
  default the L3 agents' hosts, same AZs), and ``networks`` tenant networks
  ``tenant-net-0001``... with one DHCP subnet each, network i bound to
  ``dhcp_agents_per_network`` consecutive DHCP agents from agent i, set up, its DHCP
  ports ACTIVE (see ``build_dhcp``).
- Routers ``router-0001``...: the first ``ha_routers`` are HA with replicas on
  ``ha_replicas`` consecutive agents (consecutive agents sit in different AZs),
  the next ``dvr_routers`` are distributed, the rest legacy; routers are spread
  round-robin; ``busy`` of them (chosen by the seed) carry ``l3ha:busy``.
- Every router has a gateway port, 1-3 interfaces on its own network, and every
  fifth router a floating IP. Initial routers are already processed and forwarding.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from l3ha.emulator import build_dhcp
from l3ha.emulator.config import EmulatorConfig
from l3ha.emulator.records import (
    BUSY_TAG,
    DHCP_AGENT,
    L3_AGENT,
    OWNER_DVR_INTERFACE,
    OWNER_GATEWAY,
    OWNER_HA_REPLICATED,
    OWNER_INTERFACE,
    OWNER_SNAT,
    AgentRec,
    NetworkRec,
    RouterRec,
    router_weight,
)
from l3ha.emulator.world import World


@dataclass(frozen=True)
class Built:
    """The world plus the shared networks routers need."""

    world: World
    public: NetworkRec
    ha_net: NetworkRec


def build_world(cfg: EmulatorConfig, now: datetime) -> Built:
    """Create agents, networks and routers (bound, processed) as the module describes."""
    world = World(cfg.seed)
    public = world.add_network("public", "172.24.0", True, now - timedelta(days=30))
    ha_net = world.add_network(f"HA network tenant {world.project_id}", "169.254.192", False,
                               now - timedelta(days=30))
    legacy = _add_agents(world, "net", cfg.agents, cfg.azs, "legacy", now)
    snat: list[AgentRec] = []
    if cfg.dvr_routers:
        snat = _add_agents(world, "snat", max(2, cfg.azs), cfg.azs, "dvr_snat", now)
        _add_agents(world, "compute", 1, cfg.azs, "dvr", now)
    for i in range(cfg.dhcp_agents):
        world.add_agent(f"{cfg.dhcp_host_prefix}-{i + 1}", f"az{i % cfg.azs + 1}", DHCP_AGENT,
                        "", now)
    busy = set(random.Random(cfg.seed).sample(range(cfg.routers), cfg.busy))
    created = now - timedelta(days=1)
    for i in range(cfg.routers):
        router = _add_router(world, cfg, i, created)
        if i in busy:
            world.set_tags(router, [BUSY_TAG], created)
            router.revision = 3
        router.weight = router_weight(router.tags)
        _place(world, cfg, router, legacy, snat, ha_net, created)
        _add_ports(world, router, public, created)
    build_dhcp.add_tenant_networks(world, cfg, created)
    return Built(world, public, ha_net)


def _add_agents(world: World, prefix: str, count: int, azs: int, mode: str,  # noqa: PLR0917
                now: datetime) -> list[AgentRec]:
    return [world.add_agent(f"{prefix}-{i + 1}", f"az{i % azs + 1}", L3_AGENT, mode, now)
            for i in range(count)]


def _add_router(world: World, cfg: EmulatorConfig, i: int, now: datetime) -> RouterRec:
    name = f"router-{i + 1:04d}"
    net = world.add_network(f"private-{i + 1:04d}", f"10.{(i >> 8) & 255}.{i & 255}", False, now)
    router = world.add_router(name, net, now)
    router.ha = i < cfg.ha_routers
    router.distributed = cfg.ha_routers <= i < cfg.ha_routers + cfg.dvr_routers
    return router


def _add_ports(world: World, router: RouterRec, public: NetworkRec, now: datetime) -> None:
    """Gateway, interfaces (and SNAT ports for DVR) plus a floating IP on every fifth router.

    Counters of hosting agents are adjusted afterwards since ports arrive after binding.
    """
    world.add_port(router, public, world.new_public_ip(), OWNER_GATEWAY, now)
    owner = OWNER_HA_REPLICATED if router.ha else (
        OWNER_DVR_INTERFACE if router.distributed else OWNER_INTERFACE)
    base = router.network.cidr_base
    for k in range(1 + router.index % 3):
        world.add_port(router, router.network, f"{base}.{1 + 64 * k}", owner, now)
        if router.distributed:
            world.add_port(router, router.network, f"{base}.{2 + 64 * k}", OWNER_SNAT, now)
    if router.index % 5 == 0:
        world.add_fip(router, f"{base}.10", now)
    for replica in router.bindings.values():
        replica.agent.interfaces += router.interfaces
        replica.agent.floating_ips += len(router.fips)


def _place(world: World, cfg: EmulatorConfig, router: RouterRec, legacy: list[AgentRec],  # noqa: PLR0917
           snat: list[AgentRec], ha_net: NetworkRec, now: datetime) -> None:
    i = router.index
    if router.distributed:
        targets = [snat[i % len(snat)]]
    elif router.ha:
        count = min(cfg.ha_replicas, len(legacy))
        targets = [legacy[(i + k) % len(legacy)] for k in range(count)]
    else:
        targets = [legacy[i % len(legacy)]]
    for n, agent in enumerate(targets):
        replica = world.bind(router, agent, ha_net, now)
        replica.processed = True
        replica.synced = True
        if router.ha:
            master = n == 0
            replica.vrrp = "master" if master else "backup"
            replica.reported = "active" if master else "standby"
    router.ports_host = targets[0].host
    router.ports_status = "ACTIVE"
    router.reachable = True
