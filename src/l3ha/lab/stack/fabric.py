"""The stack's fabric: one switch joining nodes, VMs and the client. I/O: ``ip``, ovs-vsctl.

The fabric is an Open vSwitch bridge in namespace ``l3rs-fab`` (the kernel may
lack VLAN devices and bridge VLAN filtering): node ports are trunks (tenant
VLANs tagged, the flat external network untagged), VM ``k`` sits on an access
port of VLAN 100+k, the client on an untagged port. Cutting a node's link
takes its port off the switch.
"""

from __future__ import annotations

from pathlib import Path

from l3ha.lab.netns import add_namespace, ip
from l3ha.lab.stack.processes import StateFile
from l3ha.lab.stack.spec import (
    CLIENT_CIDR,
    CLIENT_NS,
    FABRIC_BRIDGE,
    FABRIC_NS,
    VM_DEVICE,
    fabric_port,
    tenant_router_ip,
    tenant_vlan,
    vm_ip,
    vm_mac,
    vm_namespace,
)
from l3ha.lab.stack.vswitch import Ovs


def fabric(state: StateFile, root: Path, namespace: str = FABRIC_NS) -> Ovs:
    """The fabric's Open vSwitch in ``namespace`` (files under ROOT/fab, roles fab/...)."""
    return Ovs(namespace, root / "fab", state, "fab")


def plug(
    fab: Ovs,
    fabric_end: str,
    namespace: str,
    device: str,
    *options: str,
    switch: str = FABRIC_BRIDGE,
) -> None:
    """A veth pair: ``fabric_end`` on the fabric's ``switch`` (with ``options``), ``device``
    up in ``namespace``."""
    ip("-n", fab.namespace, "link", "add", fabric_end, "type", "veth", "peer", "name", device,
       "netns", namespace)  # fmt: skip
    ip("-n", fab.namespace, "link", "set", fabric_end, "up")
    ip("-n", namespace, "link", "set", device, "up")
    fab.vsctl("--may-exist", "add-port", switch, fabric_end, *options)


def make_fabric(fab: Ovs) -> None:
    """The fabric namespace and switch, and the client namespace on the external network."""
    add_namespace(FABRIC_NS)
    fab.start()
    fab.add_bridge(FABRIC_BRIDGE)
    add_namespace(CLIENT_NS)
    plug(fab, "client", CLIENT_NS, "eth0")
    ip("-n", CLIENT_NS, "address", "add", CLIENT_CIDR, "dev", "eth0")


def make_vm(fab: Ovs, index: int) -> None:
    """VM ``index``: a namespace on an access port of its tenant VLAN, routed via its router.

    Its MAC is fixed (``vm_mac``), so that a Neutron port can name it for DHCP.
    """
    namespace = vm_namespace(index)
    add_namespace(namespace)
    plug(fab, f"vm{index}", namespace, VM_DEVICE, "--", "set", "port", f"vm{index}",
         f"tag={tenant_vlan(index)}")  # fmt: skip
    ip("-n", namespace, "link", "set", VM_DEVICE, "address", vm_mac(index))
    ip("-n", namespace, "address", "add", f"{vm_ip(index)}/24", "dev", VM_DEVICE)
    ip("-n", namespace, "route", "add", "default", "via", tenant_router_ip(index))


def cut_link(fab: Ovs, host: str) -> None:
    fab.vsctl("--if-exists", "del-port", FABRIC_BRIDGE, fabric_port(host))


def restore_link(fab: Ovs, host: str) -> None:
    fab.vsctl("--may-exist", "add-port", FABRIC_BRIDGE, fabric_port(host))
