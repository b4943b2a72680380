"""Neutron's DHCP agent scheduler through the openstacksdk adapter. I/O: HTTP to Neutron.

``NeutronDhcp`` wraps a ``NeutronCloud`` and sends its requests through the
adapter's own request plumbing (``NeutronCloud.api``: the transport's
``request`` and ``collection``) over the SDK's authenticated network proxy,
so the one retry policy, the ``--api-rate`` cap, the error translation and
the pagination apply to every DHCP call as well. The calls are the ones the
SDK's ``add_dhcp_agent_to_network``, ``remove_dhcp_agent_from_network``,
``network_hosting_dhcp_agents`` and ``dhcp_agent_hosting_networks`` make:

- ``POST /agents/{A}/dhcp-networks {"network_id": N}``: 201; 409
  ``NetworkHostedByDHCPAgent`` when already hosted (taken as done and read
  back); 404 ``InvalidDHCPAgent`` for a disabled or non-DHCP agent (a
  refusal, raised as ``ConflictError``).
- ``DELETE /agents/{A}/dhcp-networks/{N}``: 204; 409
  ``NetworkNotHostedByDhcpAgent`` when not hosted (taken as done, read back).
- ``GET /networks/{N}/dhcp-agents``, ``GET /agents/{A}/dhcp-networks``,
  ``GET /ports?device_owner=network:dhcp``.

Every write is read back before it returns.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from l3ha.clock import Clock, SystemClock
from l3ha.cloud import translate
from l3ha.cloud.adapter import NeutronCloud, expect_hosted
from l3ha.cloud.transport import quoted
from l3ha.dhcp_model import (
    DHCP_AGENT_TYPE,
    DHCP_PORT_OWNER,
    DhcpBinding,
    DhcpPort,
    DhcpSnapshot,
    Network,
    OtherAgent,
)
from l3ha.errors import ApiNotFoundError, ConflictError, NotFoundError, ReadBackError
from l3ha.model import Agent

log = logging.getLogger(__name__)

#: Networks whose DHCP ports one ``GET /ports`` asks for (repeated ``network_id`` filters).
PORTS_BATCH = 40


def network_from_dict(
    data: Mapping[str, Any],
    dhcp_subnets: set[str] | None,
    had_dhcp: AbstractSet[str] = frozenset(),
) -> Network:
    """A ``Network`` from one element of ``GET /v2.0/networks``.

    ``dhcp_subnets``: ids of subnets with DHCP enabled. ``None`` when subnets
    could not be listed: then a network is taken to need DHCP when it has a
    subnet and has (or had) DHCP, i.e. its id is in ``had_dhcp`` (networks
    with a DHCP binding or a DHCP port).
    """
    subnets = data.get("subnets")
    net_id = str(data["id"])
    if isinstance(subnets, list) and not subnets:
        needs = False  # no subnet, no DHCP (Neutron does not schedule such a network)
    elif dhcp_subnets is None:
        needs = net_id in had_dhcp
    else:
        needs = isinstance(subnets, list) and any(str(s) in dhcp_subnets for s in subnets)
    hints = data.get("availability_zone_hints") or ()
    return Network(
        id=net_id,
        name=str(data.get("name") or ""),
        availability_zone_hints=tuple(str(h) for h in hints),
        project_id=str(data.get("project_id") or data.get("tenant_id") or ""),
        admin_state_up=bool(data.get("admin_state_up", True)),
        needs_dhcp=needs,
    )


def dhcp_port_from_dict(data: Mapping[str, Any]) -> DhcpPort:
    """A ``DhcpPort`` from one element of ``GET /v2.0/ports``."""
    return DhcpPort(
        id=str(data["id"]),
        network_id=str(data.get("network_id") or ""),
        host=str(data.get("binding:host_id") or ""),
        status=str(data.get("status") or ""),
        device_id=str(data.get("device_id") or ""),
    )


class NeutronDhcp:
    """``l3ha.cloud.dhcp_base.DhcpCloud`` over a ``NeutronCloud`` (see the module docstring)."""

    def __init__(self, cloud: NeutronCloud, *, clock: Clock | None = None) -> None:
        self._cloud = cloud
        self._api = cloud.api
        self._clock = clock or SystemClock()
        self.name = cloud.name

    # --- reads ----------------------------------------------------------------

    def list_dhcp_agents(self) -> list[Agent]:
        """Every DHCP agent."""
        agents = self._cloud.agents_of_type(DHCP_AGENT_TYPE, "list DHCP agents")
        self._check_access(agents)
        return agents

    def _check_access(self, agents: list[Agent]) -> None:
        if not agents:
            self._cloud.check_scheduler_access("dhcp-networks", "DHCP")

    def read_dhcp_snapshot(self) -> DhcpSnapshot:
        """Agents (split by type), networks, bindings per DHCP agent (concurrently), ports."""
        observed_at = self._clock.wall().isoformat()
        raw_agents = self._api.collection("/agents", "agents", "list agents")
        agents = [
            translate.agent_from_dict(a)
            for a in raw_agents
            if a.get("agent_type") == DHCP_AGENT_TYPE
        ]
        self._check_access(agents)
        others = tuple(
            OtherAgent(str(a["id"]), str(a.get("host") or ""), str(a.get("agent_type") or ""))
            for a in raw_agents
            if a.get("agent_type") != DHCP_AGENT_TYPE
        )
        raw_networks, dhcp_subnets = self._networks()
        known = {str(n["id"]) for n in raw_networks}
        per_agent = self._api.concurrently(self.networks_on_agent, [a.id for a in agents])
        bindings = tuple(
            DhcpBinding(net, agent.id)
            for agent, nets in zip(agents, per_agent, strict=True)
            for net in nets
            if net in known
        )
        raw_ports = self._api.collection(
            "/ports", "ports", "list DHCP ports", [("device_owner", DHCP_PORT_OWNER)]
        )
        ports = tuple(dhcp_port_from_dict(p) for p in raw_ports)
        had_dhcp = {b.network_id for b in bindings} | {p.network_id for p in ports}
        return DhcpSnapshot(
            agents=tuple(agents),
            networks=tuple(network_from_dict(n, dhcp_subnets, had_dhcp) for n in raw_networks),
            bindings=bindings,
            ports=ports,
            other_agents=others,
            observed_at=observed_at,
        )

    def _networks(self) -> tuple[list[dict[str, Any]], set[str] | None]:
        """Every network, and the ids of subnets with DHCP (``None``: cannot be listed)."""
        raw = self._api.collection("/networks", "networks", "list networks")
        try:
            subnets = self._api.collection(
                "/subnets", "subnets", "list subnets with DHCP", [("enable_dhcp", "True")]
            )
        except ApiNotFoundError:
            log.info("subnets cannot be listed: networks with DHCP ports or bindings need DHCP")
            return raw, None
        return raw, {str(s["id"]) for s in subnets if s.get("enable_dhcp", True)}

    def networks_on_agent(self, agent_id: str) -> list[str]:
        """Ids of the networks one DHCP agent hosts."""
        what = f"list networks on DHCP agent {agent_id}"
        raw = self._api.collection(f"/agents/{quoted(agent_id)}/dhcp-networks", "networks", what)
        return [str(n["id"]) for n in raw]

    def dhcp_agents_of_network(self, network_id: str) -> list[Agent]:
        """The DHCP agents hosting one network, read fresh."""
        what = f"list DHCP agents hosting network {network_id}"
        path = f"/networks/{quoted(network_id)}/dhcp-agents"
        try:
            raw = self._api.collection(path, "agents", what)
        except ApiNotFoundError as exc:
            raise NotFoundError(f"no network with id {network_id!r}") from exc
        return [translate.agent_from_dict(a) for a in raw]

    def dhcp_ports(self, network_id: str) -> list[DhcpPort]:
        """The network's DHCP ports, read fresh."""
        what = f"list DHCP ports of network {network_id}"
        params = [("network_id", network_id), ("device_owner", DHCP_PORT_OWNER)]
        return [
            dhcp_port_from_dict(p) for p in self._api.collection("/ports", "ports", what, params)
        ]

    def dhcp_ports_of_networks(self, network_ids: list[str]) -> list[DhcpPort]:
        """The DHCP ports of many networks, ``PORTS_BATCH`` networks per request."""
        ports: list[DhcpPort] = []
        for start in range(0, len(network_ids), PORTS_BATCH):
            chunk = network_ids[start : start + PORTS_BATCH]
            params = [("device_owner", DHCP_PORT_OWNER)] + [("network_id", n) for n in chunk]
            what = f"list DHCP ports of {len(chunk)} network(s)"
            ports += [
                dhcp_port_from_dict(p)
                for p in self._api.collection("/ports", "ports", what, params)
            ]
        return ports

    # --- writes (each read back) ----------------------------------------------

    def add_network_to_agent(self, network_id: str, agent_id: str) -> None:
        """Schedule the network to the agent; an "already hosted" 409 counts as done."""
        what = f"add network {network_id} to DHCP agent {agent_id}"
        path = f"/agents/{quoted(agent_id)}/dhcp-networks"
        try:
            self._api.request("POST", path, what, body={"network_id": network_id})
        except ConflictError as exc:  # InvalidDHCPAgent too (translate.REFUSING_AGENT_TYPES)
            if "NetworkHostedByDHCPAgent" not in str(exc):
                raise
        self._expect(network_id, agent_id, True, what)

    def remove_network_from_agent(self, network_id: str, agent_id: str) -> None:
        """Remove the network from the agent; a "not hosted" 409 counts as done."""
        what = f"remove network {network_id} from DHCP agent {agent_id}"
        path = f"/agents/{quoted(agent_id)}/dhcp-networks/{quoted(network_id)}"
        try:
            self._api.request("DELETE", path, what)
        except ConflictError as exc:
            if "NetworkNotHostedByDhcpAgent" not in str(exc):
                raise
        self._expect(network_id, agent_id, False, what)

    def _expect(self, network_id: str, agent_id: str, present: bool, what: str) -> None:
        hosts = [a.id for a in self.dhcp_agents_of_network(network_id)]
        expect_hosted(what, agent_id, present, hosts, "DHCP agents")

    def set_dhcp_agent_state(
        self, agent_id: str, admin_state_up: bool | None, description: str | None
    ) -> None:
        """``PUT /agents/{id}`` with the given fields, then read the agent back."""
        fields: dict[str, object] = {}
        if admin_state_up is not None:
            fields["admin_state_up"] = admin_state_up
        if description is not None:
            fields["description"] = description
        if not fields:
            return
        what = (
            f"update DHCP agent {agent_id} ({', '.join(f'{k}={v!r}' for k, v in fields.items())})"
        )
        self._api.request("PUT", f"/agents/{quoted(agent_id)}", what, body={"agent": fields})
        seen = self._cloud.agent_dict(agent_id, what)
        for key, value in fields.items():
            if seen.get(key) != value:
                raise ReadBackError(
                    f"{what}: accepted, but reading back shows {key}={seen.get(key)!r}"
                )
