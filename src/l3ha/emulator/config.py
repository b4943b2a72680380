"""Settings of one emulated cloud: sizes, timings, capacities. Pure.

Every field has a default that makes a small, healthy cloud; ``validate``
names the first bad field in a one-line message.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Timing fields that must be finite; all but the first two may be 0.
_TIMES = ("report_interval", "agent_down_time", "router_base_time", "router_port_time",
          "ha_takeover_time", "ha_vrrp_advert_int", "neutron_move_time", "rpc_response_timeout",
          "port_active_delay", "broker_reconnect_time")




def _finite_time(value: float) -> bool:
    return math.isfinite(value) and value >= 0


@dataclass
class EmulatorConfig:
    """How big the emulated cloud is and how its simulated agents behave."""

    agents: int = 10
    routers: int = 100
    busy: int = 0
    # Untagged routers (chosen by the seed) that carry busy routers' traffic (``traffic``).
    hot: int = 0
    ha_routers: int = 0
    dvr_routers: int = 0
    azs: int = 1
    report_interval: float = 30.0
    agent_down_time: float = 75.0
    seed: int = 0
    # Router processing, calibrated on a real stack (docs/fidelity.md): one 2-port router
    # answered 2.5-6.3 s after its binding (3.0 + 0.25 x 2 = 3.5 s here), and an agent given
    # four routers at once finished the last about twice one router's time (concurrency 2).
    # The per-port slope was not measured (all measured routers had 2 ports).
    agent_concurrency: int = 2
    router_base_time: float = 3.0
    router_port_time: float = 0.25
    # Seconds a legacy router's ports turn ACTIVE after it forwards (its L2 agent reports the
    # devices up later): 0-1.7 s after the router answered on the real stack (docs/fidelity.md).
    port_active_delay: float = 1.0
    # Seconds after a broker outage ends before the first agent is back on the bus and
    # reports (its reconnection back-off): 1.6 s on the real stack (docs/fidelity.md); the
    # rest come back over the fault's ``spread``.
    broker_reconnect_time: float = 1.6
    dataplane_listeners: int = 0
    neutron_auto_failover: bool = False
    keystone: bool = False
    host: str = "127.0.0.1"
    port: int = 0
    # VRRP-like takeover: keepalived waits ~3 adverts (2 s) plus skew; the VIP was dark
    # 8.8 s from the active node's death on the real stack (docs/fidelity.md).
    ha_takeover_time: float = 8.8
    # Busy weight an agent carries before its routers stop forwarding.
    agent_capacity: int = 1000
    # DHCP agents on <dhcp_host_prefix>-1, -2, ... (by default the L3 agents' hosts, so a
    # killed node takes both down) and tenant networks with a DHCP subnet, each bound to
    # dhcp_agents_per_network agents (Neutron's default 1); see ``sim_dhcp``.
    dhcp_agents: int = 0
    networks: int = 0
    dhcp_agents_per_network: int = 1
    dhcp_host_prefix: str = "net"
    # Seconds a DHCP agent needs to set one network up, and networks it sets up at once
    # (neutron's num_sync_threads).
    dhcp_network_time: float = 1.0
    dhcp_concurrency: int = 4
    # Neutron's network_auto_schedule (default on): a DHCP agent's resync and the DHCP
    # failover top networks up to dhcp_agents_per_network.
    network_auto_schedule: bool = True
    # Replicas per HA router (Neutron's max_l3_agents_per_router, capped by agents).
    ha_replicas: int = 2
    # Agents a new HA router created through the API is scheduled to (Neutron's default 3).
    max_l3_agents_per_router: int = 3
    # Keystone credentials when ``keystone`` is on.
    username: str = "admin"
    password: str = "l3ha-emulator"
    project_name: str = "admin"
    # Loopback network that holds the data-plane listeners (127.A.B.0/16).
    listener_prefix: tuple[int, int] = (42, 0)
    # TCP port every listener binds (0: the first listener's kernel-chosen port, shared).
    dataplane_port: int = 0
    # Neutron's ha_vrrp_advert_int: an agent reports a new primary this long after the
    # transition, and its state-change notifier sends at most one batch per interval.
    ha_vrrp_advert_int: float = 2.0
    # Neutron's automatic failover: seconds one successful reschedule blocks its pass
    # (the DB transaction plus the router_added_to_agent RPC call to a live agent).
    neutron_move_time: float = 0.2
    # Neutron's rpc_response_timeout: a router_added_to_agent call to an agent that cannot
    # receive blocks this long, twice (AGENT_NOTIFY_MAX_ATTEMPTS), before it gives up.
    rpc_response_timeout: float = 60.0
    # Neutron's router_auto_schedule (default on): an enabled agent's full resync binds
    # unhosted routers to it and tops HA routers up (see ``sim_schedule``).
    router_auto_schedule: bool = True
    # ML2/OVN mode (``sim_ovn``): no L3 agents; ``ovn_chassis`` gateway chassis gw-1..N,
    # BFD detection of a crash, the claim after it, a graceful move's and a pre-emptive
    # failback's outage (seconds, as measured on OVN 23.03; docs/ovn.md).
    ovn: bool = False
    ovn_chassis: int = 3
    ovn_bfd_detection_time: float = 3.0
    ovn_claim_time: float = 0.5
    ovn_graceful_move_time: float = 1.0
    ovn_failback_time: float = 1.4
    # Neutron 29 after a southbound reconnection: one chassis demoted to priority 0 in every
    # HA chassis group (False: a Neutron that does not).
    ovn_sb_reconnect_demotes: bool = True

    def validate(self) -> None:
        """Raise ValueError naming the first field that makes no sense."""
        self._require(_TIMES, math.isfinite, "a finite number")
        self._require(("agents", "routers", "busy", "hot", "ha_routers", "dvr_routers",
                       "dataplane_listeners", "dhcp_agents", "seed"), lambda v: v >= 0, "0 or more")
        self._require(("report_interval", "agent_down_time", "agent_concurrency", "azs",
                       "agent_capacity", "ha_replicas", "max_l3_agents_per_router"),
                      lambda v: v > 0, "greater than 0")
        self._require(_TIMES[2:], lambda v: v >= 0, "0 or more")
        if self.ha_routers + self.dvr_routers > self.routers:
            raise ValueError(
                "ha_routers + dvr_routers must not exceed routers "
                f"({self.ha_routers}+{self.dvr_routers} > {self.routers})"
            )
        if self.busy > self.routers:
            raise ValueError(f"busy must not exceed routers ({self.busy} > {self.routers})")
        if self.busy + self.hot > self.routers:
            raise ValueError(
                f"busy + hot must not exceed routers ({self.busy}+{self.hot} > {self.routers})"
            )
        if self.routers and not self.agents:
            raise ValueError("routers need at least one agent")
        if self.dataplane_listeners > self.routers:
            raise ValueError("dataplane_listeners must not exceed routers")
        if self.dataplane_listeners > 65000:
            raise ValueError("dataplane_listeners must be at most 65000")
        self._require(("port", "dataplane_port"), lambda v: 0 <= v <= 65535, "0..65535")
        self._validate_dhcp()
        self._validate_ovn()

    def _require(self, names: tuple[str, ...], ok: Callable[[Any], bool], rule: str) -> None:
        """Raise ValueError for the first of ``names`` whose value is not ``ok``."""
        for name in names:
            if not ok(getattr(self, name)):
                raise ValueError(f"{name} must be {rule}, not {getattr(self, name)}")

    def _validate_ovn(self) -> None:
        if self.ovn:
            self._require(("ovn_chassis",), lambda v: v > 0, "greater than 0")
        for name in ("ha_routers", "dvr_routers", "dhcp_agents"):
            if self.ovn and getattr(self, name):
                raise ValueError(f"{name} needs L3 or DHCP agents, which an OVN cloud has none "
                                 "of (ovn)")
        self._require(("ovn_bfd_detection_time", "ovn_claim_time", "ovn_graceful_move_time",
                       "ovn_failback_time"), _finite_time, "a finite number, 0 or more")

    def _validate_dhcp(self) -> None:
        self._require(("dhcp_network_time",), _finite_time, "a finite number, 0 or more")
        self._require(("networks",), lambda v: 0 <= v <= 16384, "0..16384")
        self._require(("dhcp_agents_per_network", "dhcp_concurrency"), lambda v: v > 0,
                      "greater than 0")
        prefix = self.dhcp_host_prefix
        if not prefix or any(c.isspace() or c == "/" for c in prefix):
            raise ValueError(f"dhcp_host_prefix must be a host name prefix, not {prefix!r}")

    def warnings(self) -> list[str]:
        """Settings that are valid but make a cloud behave oddly, one sentence each."""
        notes = []
        if self.report_interval >= self.agent_down_time:
            notes.append(
                f"report_interval {self.report_interval:g} s is not below agent_down_time "
                f"{self.agent_down_time:g} s: agents would flap between alive and dead"
            )
        if (self.router_auto_schedule and self.ha_routers
                and self.ha_replicas < min(self.max_l3_agents_per_router, self.agents)):
            notes.append(
                f"ha_replicas {self.ha_replicas} is below max_l3_agents_per_router "
                f"{self.max_l3_agents_per_router}: the next agent full resync adds a replica "
                "of every HA router to that agent (router_auto_schedule)"
            )
        if self.networks and self.dhcp_agents_per_network > self.dhcp_agents:
            notes.append(
                f"dhcp_agents_per_network {self.dhcp_agents_per_network} is above dhcp_agents "
                f"{self.dhcp_agents}: networks start with {self.dhcp_agents} DHCP agents each"
            )
        return notes
