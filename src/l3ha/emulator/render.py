"""Neutron-shaped dicts for the emulator's records. Pure (reads the simulation's state).

Agent timestamps are naive UTC ``YYYY-MM-DD HH:MM:SS``; router, port, network
and floating IP timestamps are ISO 8601 with ``Z``, as real Neutron renders them.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from l3ha.emulator import sim_ports
from l3ha.emulator.records import (
    DHCP_AGENT,
    OWNER_DVR_INTERFACE,
    OWNER_HA_INTERFACE,
    AgentRec,
    FipRec,
    NetworkRec,
    PortRec,
    RouterRec,
)
from l3ha.emulator.sim import Simulation
from l3ha.emulator.world import World

Doc = dict[str, Any]


def agent_time(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S")


def iso_time(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def _configurations(sim: Simulation, agent: AgentRec) -> Doc:
    if agent.agent_type == DHCP_AGENT:  # the counts of its last state report
        return {"dhcp_driver": "neutron.agent.linux.dhcp.Dnsmasq", "dhcp_lease_duration": 86400,
                "log_agent_heartbeats": False, **sim.dhcp.configurations(agent)}
    if not agent.is_l3:
        return {"log_agent_heartbeats": False}
    return {
        "agent_mode": agent.mode,
        "ex_gw_ports": agent.ex_gw_ports,
        "extensions": [],
        "floating_ips": agent.floating_ips,
        "handle_internal_only_routers": True,
        "interface_driver": "openvswitch",
        "interfaces": agent.interfaces,
        "log_agent_heartbeats": False,
        "routers": len(agent.routers),
    }


def agent_doc(sim: Simulation, agent: AgentRec, now: datetime) -> Doc:
    """The agent as ``GET /v2.0/agents`` shows it (``alive`` judged at ``now``)."""
    l3 = agent.is_l3
    return {
        "id": agent.id,
        "agent_type": agent.agent_type,
        "binary": "neutron-l3-agent" if l3 else "neutron-dhcp-agent",
        "topic": "l3_agent" if l3 else "dhcp_agent",
        "host": agent.host,
        "admin_state_up": agent.admin_state_up,
        "created_at": agent_time(agent.created_at),
        "started_at": agent_time(agent.started_at),
        "heartbeat_timestamp": agent_time(agent.heartbeat),
        "alive": sim.is_alive(agent, now),
        "configurations": _configurations(sim, agent),
        "description": agent.description,
        "availability_zone": agent.az,
        "resources_synced": None,
    }


def hosting_agent_doc(sim: Simulation, agent: AgentRec, now: datetime, **extra: Any) -> Doc:
    """An entry of ``GET /v2.0/routers/{id}/l3-agents`` (``extra``: its ``ha_state``) or
    ``GET /v2.0/networks/{id}/dhcp-agents``."""
    return {**agent_doc(sim, agent, now), "resource_versions": {}, "ha_chassis_priority": None,
            **extra}


def reported_ha_states(sim: Simulation, router: RouterRec, now: datetime) -> dict[str, str]:
    """Per agent id, the HA state the server reports, with Neutron's dead-agent rule.

    When an agent that reported ``active`` is dead (or disabled), its state
    becomes ``standby`` — or ``unknown`` when every hosting agent is dead. Like
    Neutron, the corrected state is written back, and dead replicas already
    ``unknown`` do not count as dead ones (neutron/db/l3_hamode_db.py,
    ``_get_bindings_and_update_router_state_for_dead_agents``).
    """
    replicas = list(router.bindings.values())
    dead = [r for r in replicas if not (sim.is_alive(r.agent, now) and r.agent.admin_state_up)]
    active_dead = [r for r in dead if r.reported == "active"]
    standby_dead = [r for r in dead if r.reported == "standby"]
    if active_dead:
        all_dead = len(active_dead) + len(standby_dead) == len(replicas)
        state = "unknown" if all_dead else "standby"
        for replica in active_dead:
            replica.reported = state
    return {r.agent.id: r.reported for r in replicas}


def ha_view(world: World, sim: Simulation, now: datetime) -> Doc:
    """``GET /_emulator/ha``: per HA router and host, the real VRRP state and the reported one."""
    out: Doc = {}
    for router in world.routers.values():
        if router.ha:
            reported = reported_ha_states(sim, router, now)
            out[router.id] = {r.agent.host: {"vrrp": r.vrrp, "reported": reported[r.agent.id]}
                              for r in router.bindings.values()}
    return out


def router_doc(router: RouterRec, public: NetworkRec, azs: list[str],
               internal: bool = False) -> Doc:
    """A router as the API shows it; ``internal``: as the scheduler shim returns it (the
    plugin's dict, with gw_port_id, enable_snat, ha_vr_id and the default-route flags)."""
    gateway = router.ports[0] if router.has_gateway and router.ports else None
    gw_info = None
    if gateway is not None:
        gw_info = {
            "network_id": public.id,
            "external_fixed_ips": [{"subnet_id": public.subnet_id, "ip_address": gateway.ip}],
            "enable_snat": True,
        }
    doc: Doc = {
        "id": router.id,
        "name": router.name,
        "tenant_id": router.project_id,
        "admin_state_up": router.admin_state_up,
        "status": "ACTIVE",
        "external_gateway_info": gw_info,
        "description": router.description,
        "availability_zones": azs,
        "availability_zone_hints": list(router.az_hints),
        "routes": [],
        "ha": router.ha,
        "distributed": router.distributed,
        "flavor_id": None,
        "tags": list(router.tags),
        "created_at": iso_time(router.created_at),
        "updated_at": iso_time(router.updated_at),
        "revision_number": router.revision,
        "project_id": router.project_id,
    }
    if internal:
        doc["gw_port_id"] = gateway.id if gateway else None
        doc["enable_snat"] = gateway is not None
        doc["enable_default_route_bfd"] = False
        doc["enable_default_route_ecmp"] = False
        if router.ha:
            doc["ha_vr_id"] = router.index % 254 + 1
    return doc


def router_azs(router: RouterRec) -> list[str]:
    return sorted({r.agent.az for r in router.bindings.values()})


def scheduled_router_docs(routers: Iterable[RouterRec], public: NetworkRec) -> list[Doc]:
    """Routers as ``GET /v2.0/agents/{id}/l3-routers`` lists them (the plugin's dicts)."""
    return [router_doc(r, public, router_azs(r), internal=True) for r in routers]


def port_status(port: PortRec) -> str:
    """See ``sim_ports``; distributed interfaces are up while any binding is processed."""
    router = port.router
    if port.replica is not None:
        return sim_ports.ha_port_status(port.replica)
    if port.owner == OWNER_DVR_INTERFACE:
        return "ACTIVE" if any(r.processed for r in router.bindings.values()) else "DOWN"
    return sim_ports.central_status(router)


def port_host(port: PortRec) -> str:
    if port.replica is not None:
        return port.replica.agent.host if port.replica.synced else ""
    if port.owner == OWNER_DVR_INTERFACE:
        return ""
    return port.router.ports_host


def port_doc(port: PortRec) -> Doc:
    name = ""
    if port.owner == OWNER_HA_INTERFACE and port.replica is not None:
        name = f"HA port tenant {port.router.project_id}"
    project = "" if port.owner == OWNER_HA_INTERFACE else port.router.project_id
    fixed = [{"subnet_id": port.network.subnet_id, "ip_address": port.ip}]
    doc = any_port_doc(port.id, port.network, project, fixed, port_host(port))
    doc.update({"name": name, "mac_address": port.mac, "status": port_status(port),
                "device_id": port.router.id, "device_owner": port.owner,
                "created_at": iso_time(port.created_at), "updated_at": iso_time(port.created_at),
                "revision_number": 1})
    return doc


def any_port_doc(port_id: str, net: NetworkRec, project: str, fixed: list[Doc],
                 host: str) -> Doc:
    """The fields a router port and a DHCP port share, in the order Neutron shows them
    (the caller fills in name, MAC, status, device, timestamps and revision)."""
    return {
        "id": port_id,
        "name": "",
        "network_id": net.id,
        "tenant_id": project,
        "mac_address": "",
        "admin_state_up": True,
        "status": "",
        "device_id": "",
        "device_owner": "",
        "fixed_ips": fixed,
        "allowed_address_pairs": [],
        "extra_dhcp_opts": [],
        "security_groups": [],
        "description": "",
        "binding:vnic_type": "normal",
        "binding:profile": {},
        "binding:host_id": host,
        "binding:vif_type": "ovs" if host else "unbound",
        "binding:vif_details": {},
        "port_security_enabled": False,
        "tags": [],
        "created_at": "",
        "updated_at": "",
        "revision_number": 0,
        "project_id": project,
    }


def network_doc(net: NetworkRec, azs: list[str] | None = None) -> Doc:
    """A network (``azs``: the AZs of its DHCP agents); no subnet id: no subnets."""
    return {
        "id": net.id,
        "name": net.name,
        "tenant_id": "" if net.name.startswith("HA network") else net.project_id,
        "admin_state_up": True,
        "mtu": 1450 if not net.external else 1500,
        "status": "ACTIVE",
        "subnets": [net.subnet_id] if net.subnet_id else [],
        "shared": False,
        "availability_zone_hints": list(net.az_hints),
        "availability_zones": list(azs or []),
        "ipv4_address_scope": None,
        "ipv6_address_scope": None,
        "router:external": net.external,
        "description": "",
        "port_security_enabled": True,
        "is_default": False,
        "tags": [],
        "created_at": iso_time(net.created_at),
        "updated_at": iso_time(net.created_at),
        "revision_number": 1,
        "project_id": "" if net.name.startswith("HA network") else net.project_id,
    }


def fip_doc(fip: FipRec, public: NetworkRec) -> Doc:
    return {
        "id": fip.id,
        "floating_ip_address": fip.address,
        "floating_network_id": public.id,
        "router_id": fip.router.id,
        "port_id": fip.port_id,
        "fixed_ip_address": fip.fixed,
        "status": "ACTIVE" if fip.router.reachable else "DOWN",
        "tenant_id": fip.router.project_id,
        "project_id": fip.router.project_id,
        "description": "",
        "qos_policy_id": None,
        "port_details": None,
        "port_forwardings": [],
        "tags": [],
        "created_at": iso_time(fip.created_at),
        "updated_at": iso_time(fip.created_at),
        "revision_number": 1,
    }
