"""The stack's tenant topology in Neutron, and what answers on the data plane. I/O: HTTP, ping.

Talks to the stack's own Neutron API with plain JSON over HTTP (noauth, as
admin): the external network (flat, ``physnet1``), one VLAN tenant network and
one router per lab router (gateway on the external network, interface .1 on
its tenant subnet). Reachability is ``ping`` from a VM namespace to its router, and
from the client namespace to each router's gateway address.
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from l3ha.lab.stack.processes import StackError, wait_for
from l3ha.lab.stack.spec import (
    EXTERNAL_CIDR,
    EXTERNAL_GATEWAY,
    EXTERNAL_POOL,
    PHYSNET,
    StackSpec,
    router_name,
    tenant_cidr,
    tenant_pool,
    tenant_router_ip,
    tenant_vlan,
    vm_ip,
    vm_mac,
    vm_namespace,
)


@dataclass(frozen=True)
class NeutronHttp:
    """Minimal JSON client of one Neutron API endpoint (``http://127.0.0.1:PORT``)."""

    base: str
    # Binding a router blocks on an RPC call to the agent, which answers only after its
    # start-up sync: minutes on a loaded machine.
    timeout: float = 240.0

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self.base}/v2.0/{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json", "X-Auth-Token": "notused"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")[:200]
            raise StackError(f"Neutron {method} {path}: HTTP {exc.code} {detail}") from exc
        except OSError as exc:
            raise StackError(f"Neutron {method} {path}: {exc}") from exc
        return json.loads(raw) if raw else None

    def get(self, path: str) -> Any:
        return self.call("GET", path)

    def post(self, path: str, body: dict[str, Any]) -> Any:
        return self.call("POST", path, body)

    def put(self, path: str, body: dict[str, Any]) -> Any:
        return self.call("PUT", path, body)

    def agents(self, agent_type: str) -> list[dict[str, Any]]:
        quoted = urllib.parse.quote(agent_type)
        agents: list[dict[str, Any]] = self.get(f"agents?agent_type={quoted}")["agents"]
        return agents


def wait_for_agents(api: NeutronHttp, spec: StackSpec, timeout: float) -> None:
    """Every node's OVS and L3 (and DHCP) agent registered and alive."""
    types = ["Open vSwitch agent", "L3 agent"] + (["DHCP agent"] if spec.dhcp else [])

    def all_alive() -> bool:
        for agent_type in types:
            hosts = {a["host"] for a in api.agents(agent_type) if a["alive"]}
            if not set(spec.hosts) <= hosts:
                return False
        return True

    wait_for("every agent to report alive", all_alive, timeout, interval=1.0)


def create_external(api: NeutronHttp, name: str) -> str:
    """The flat external network on ``physnet1`` and its subnet (no DHCP); its id."""
    network = api.post("networks", {"network": {
        "name": name, "router:external": True, "provider:network_type": "flat",
        "provider:physical_network": PHYSNET,
    }})["network"]  # fmt: skip
    api.post("subnets", {"subnet": {
        "network_id": network["id"], "ip_version": 4, "cidr": EXTERNAL_CIDR,
        "gateway_ip": EXTERNAL_GATEWAY, "enable_dhcp": False,
        "allocation_pools": [{"start": EXTERNAL_POOL[0], "end": EXTERNAL_POOL[1]}],
    }})  # fmt: skip
    return str(network["id"])


def create_router(
    api: NeutronHttp, spec: StackSpec, index: int, external_id: str, agents: tuple[str, str]
) -> str:
    """Tenant network ``index``, router ``rINDEX`` bound to L3 agent ``agents[0]``, joined to
    the outside; with DHCP the network is bound to DHCP agent ``agents[1]`` of the same node.

    With DHCP the VM gets a Neutron port (its MAC and .10), so dnsmasq answers it.

    The bare router is bound before it gets ports (Neutron schedules it only once it
    has some), so routers spread over the nodes in turn whatever the scheduler would do;
    so is the network before its DHCP subnet (the scheduler, going by load reports that
    lag the bring-up, would put most networks on one agent).
    """
    l3_agent, dhcp_agent = agents
    network = api.post("networks", {"network": {
        "name": f"l3rs-net{index}", "provider:network_type": "vlan",
        "provider:physical_network": PHYSNET, "provider:segmentation_id": tenant_vlan(index),
    }})["network"]  # fmt: skip
    if spec.dhcp:
        api.post(f"agents/{dhcp_agent}/dhcp-networks", {"network_id": network["id"]})
    subnet = api.post("subnets", {"subnet": {
        "network_id": network["id"], "ip_version": 4, "cidr": tenant_cidr(index),
        "gateway_ip": tenant_router_ip(index), "enable_dhcp": spec.dhcp,
        "allocation_pools": [dict(zip(("start", "end"), tenant_pool(index), strict=True))],
    }})["subnet"]  # fmt: skip
    if spec.dhcp:
        api.post("ports", {"port": {
            "network_id": network["id"], "name": f"l3rs-vm{index}", "mac_address": vm_mac(index),
            "fixed_ips": [{"subnet_id": subnet["id"], "ip_address": vm_ip(index)}],
        }})  # fmt: skip
    router = api.post("routers", {"router": {"name": router_name(index), "ha": spec.is_ha(index)}})
    router_id = str(router["router"]["id"])
    if not spec.is_ha(index):
        bind_bare_router(api, router_id, l3_agent)
    api.put(f"routers/{router_id}", {"router": {"external_gateway_info": {
        "network_id": external_id}}})  # fmt: skip
    api.put(f"routers/{router_id}/add_router_interface", {"subnet_id": subnet["id"]})
    return router_id


def bind_bare_router(api: NeutronHttp, router_id: str, agent_id: str, attempts: int = 3) -> None:
    """Bind a router that has no ports yet to L3 agent ``agent_id``.

    An agent that resyncs meanwhile (another router was just bound to it) has Neutron
    auto-schedule every unhosted router to it, this one too: Neutron then answers 409
    RouterHostedByL3Agent. The router, without ports, is wired nowhere yet, so it is taken
    off that agent and bound again.
    """
    for _ in range(attempts - 1):
        try:
            api.post(f"agents/{agent_id}/l3-routers", {"router_id": router_id})
            return
        except StackError as exc:
            if "RouterHostedByL3Agent" not in str(exc):
                raise
        for agent in api.get(f"routers/{router_id}/l3-agents")["agents"]:
            api.call("DELETE", f"agents/{agent['id']}/l3-routers/{router_id}")
    api.post(f"agents/{agent_id}/l3-routers", {"router_id": router_id})


def create_topology(api: NeutronHttp, spec: StackSpec) -> dict[str, str]:
    """Every router (and DHCP network) of the spec, spread over the nodes in turn, made
    several at once; router name -> id."""
    external_id = create_external(api, "l3rs-external")
    l3 = {a["host"]: str(a["id"]) for a in api.agents("L3 agent")}
    dhcp = {a["host"]: str(a["id"]) for a in api.agents("DHCP agent")} if spec.dhcp else {}
    agents = [(l3[host], dhcp.get(host, "")) for host in spec.hosts]

    def create(index: int) -> str:
        return create_router(api, spec, index, external_id, agents[(index - 1) % len(agents)])

    # Legacy routers a thread per node, each making its node's routers in turn (most of a
    # router's calls wait on the servers: RPC to the agents, port binding). HA routers one by one
    # after them: the first one makes the tenant's HA network, which concurrent ones would
    # race to create, and Neutron's scheduler binds them to agents the legacy ones use.
    legacy = [k for k in spec.router_indexes if not spec.is_ha(k)]
    per_node = [legacy[i :: len(agents)] for i in range(len(agents))]
    ids: dict[int, str] = {}
    with ThreadPoolExecutor(max_workers=len(agents)) as pool:
        for made in pool.map(lambda indexes: {k: create(k) for k in indexes}, per_node):
            ids.update(made)
    ids.update({k: create(k) for k in spec.router_indexes if spec.is_ha(k)})
    return {router_name(k): ids[k] for k in spec.router_indexes}


def pings(namespace: str, address: str, timeout_s: int = 1) -> bool:
    """One ICMP echo from ``namespace`` to ``address`` answered within ``timeout_s``."""
    result = subprocess.run(
        ["ip", "netns", "exec", namespace, "ping", "-c", "1", "-W", str(timeout_s), "-q", address],
        capture_output=True,
        check=False,
    )
    return result.returncode == 0


def unanswered(spec: StackSpec) -> list[str]:
    """Routers whose VM gets no answer from the router's tenant address right now."""
    return [
        router_name(k)
        for k in spec.router_indexes
        if not pings(vm_namespace(k), tenant_router_ip(k))
    ]


def wait_for_routers(spec: StackSpec, timeout: float) -> None:
    wait_for("every VM to reach its router", lambda: not unanswered(spec), timeout, 1.0)


def gateway_addresses(api: NeutronHttp) -> list[str]:
    """Every router's address on the external network, as Neutron gave it."""
    return [
        str(fixed["ip_address"])
        for router in api.get("routers")["routers"]
        for fixed in (router.get("external_gateway_info") or {}).get("external_fixed_ips", [])
    ]


def wait_for_gateways(namespace: str, addresses: list[str], timeout: float) -> None:
    """Wait until the client ``namespace`` reaches every router's gateway address.

    The gateway port is wired after the tenant port, seconds later on a loaded machine.
    """
    wait_for(
        "the client to reach every router's gateway",
        lambda: all(pings(namespace, address) for address in addresses),
        timeout,
        1.0,
    )


def router_hosts(api: NeutronHttp, router_ids: dict[str, str]) -> dict[str, list[str]]:
    """Router name -> hosts of the L3 agents hosting it (empty: unhosted)."""
    return {
        name: sorted(str(a["host"]) for a in api.get(f"routers/{rid}/l3-agents")["agents"])
        for name, rid in router_ids.items()
    }


def ports_active_on(api: NeutronHttp, router_id: str, host: str) -> bool:
    """Every port of the router ACTIVE and bound to ``host`` (HA network ports excepted)."""
    ports = api.get(f"ports?device_id={router_id}")["ports"]
    own = [p for p in ports if p["device_owner"] != "network:router_ha_interface"]
    return bool(own) and all(p["status"] == "ACTIVE" and p["binding:host_id"] == host for p in own)
