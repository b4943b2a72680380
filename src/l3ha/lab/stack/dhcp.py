"""DHCP on the stack: which agents serve each tenant network, and whether a VM gets an offer.

I/O: HTTP to the stack's Neutron API; ``dhcp_offer`` runs ``l3ha.lab.stack.dhcp_probe``
inside a VM namespace (one DHCPDISCOVER, the DHCPOFFER that answers it).
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from l3ha.lab.stack.dhcp_probe import Offer
from l3ha.lab.stack.spec import VM_DEVICE, StackSpec, vm_mac, vm_namespace
from l3ha.lab.stack.topology import NeutronHttp


def tenant_networks(api: NeutronHttp, spec: StackSpec) -> dict[int, str]:
    """Router index -> id of its tenant network (``l3rs-netK``)."""
    by_name = {str(n["name"]): str(n["id"]) for n in api.get("networks")["networks"]}
    return {k: by_name[f"l3rs-net{k}"] for k in spec.router_indexes}


def dhcp_agents(api: NeutronHttp, network_id: str) -> dict[str, bool]:
    """Host -> alive, for every DHCP agent Neutron has scheduled ``network_id`` on."""
    agents = api.get(f"networks/{network_id}/dhcp-agents")["agents"]
    return {str(a["host"]): bool(a["alive"]) for a in agents}


def networks_on(api: NeutronHttp, host: str) -> list[str]:
    """Ids of the networks the DHCP agent of ``host`` serves."""
    agents = [a for a in api.agents("DHCP agent") if a["host"] == host]
    if not agents:
        return []
    return [str(n["id"]) for n in api.get(f"agents/{agents[0]['id']}/dhcp-networks")["networks"]]


def dhcp_ports(api: NeutronHttp, network_id: str) -> list[dict[str, Any]]:
    ports: list[dict[str, Any]] = api.get(
        f"ports?network_id={network_id}&device_owner=network:dhcp"
    )["ports"]
    return ports


def dhcp_port_active_on(api: NeutronHttp, network_id: str, host: str) -> bool:
    """The network has a DHCP port bound to ``host`` and ACTIVE."""
    ports = dhcp_ports(api, network_id)
    return any(p["binding:host_id"] == host and p["status"] == "ACTIVE" for p in ports)


def dhcp_server_host(api: NeutronHttp, network_id: str, address: str) -> str | None:
    """The host whose DHCP port on the network has ``address`` (who answered a VM)."""
    for port in dhcp_ports(api, network_id):
        if any(f["ip_address"] == address for f in port["fixed_ips"]):
            return str(port["binding:host_id"])
    return None


def dhcp_offer(index: int, timeout_s: float = 10.0) -> Offer | None:
    """Broadcast a DHCPDISCOVER from VM ``index``; the offer it got, or None."""
    argv = ["ip", "netns", "exec", vm_namespace(index), sys.executable, "-m",
            "l3ha.lab.stack.dhcp_probe", VM_DEVICE, vm_mac(index), str(timeout_s)]  # fmt: skip
    result = subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout_s + 30, check=False
    )
    if result.returncode != 0:
        return None
    address, server = result.stdout.split()
    return Offer(address, server)
