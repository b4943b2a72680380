"""What a real stack consists of: names, hosts, addresses, ports and timings. Pure.

A stack owns every network namespace, bridge and directory whose name starts
with ``l3rs-`` (one stack per machine): node ``k`` is host ``l3rs-nK`` and runs
in namespace ``l3rs-nK``; its L3 agent suffixes its router namespaces with
``@l3rs-nK``. The fabric namespace ``l3rs-fab`` holds one switch joining
every node's Open vSwitch physical bridge, the "VM" namespaces ``l3rs-vmK`` and
the client namespace ``l3rs-client``. Every address is in 169.254.0.0/16:
tenant network ``k`` is 169.254.K.0/24 (router .1, VM .10 with MAC
fa:16:3e:00:00:KK, Neutron's own pool .100-.250, VLAN 100+K on ``physnet1``),
the external network is 169.254.96.0/20 (flat on ``physnet1``, client
169.254.96.1). Services bind to 127.0.0.1 only; agents reach the broker
through a relay listening on 127.0.0.1 inside their own namespace.
"""

from __future__ import annotations

from dataclasses import dataclass

from l3ha.errors import BadInputError, NotFoundError, candidates_text

PREFIX = "l3rs-"
FABRIC_NS = PREFIX + "fab"
CLIENT_NS = PREFIX + "client"
FABRIC_BRIDGE = "fab0"
PHYSNET = "physnet1"
PHYS_BRIDGE = "br-phys"
PHYS_PORT = "phys0"
VM_DEVICE = "eth0"
MAX_NODES = 8
MAX_ROUTERS = 90
VLAN_BASE = 100
EXTERNAL_CIDR = "169.254.96.0/20"
EXTERNAL_GATEWAY = "169.254.96.1"
EXTERNAL_POOL = ("169.254.97.1", "169.254.111.200")
CLIENT_CIDR = EXTERNAL_GATEWAY + "/20"
BROKER_PORT_IN_NODE = 5672
CLOUD_NAME = "l3ha-stack"


@dataclass(frozen=True)
class Ports:
    """TCP ports on 127.0.0.1 of the machine (chosen free at bring-up)."""

    mariadb: int
    rabbit: int
    rabbit_dist: int
    epmd: int
    api: int


@dataclass(frozen=True)
class StackSpec:
    """How big the stack is and how its agents report."""

    nodes: int
    routers: int
    ha_routers: int = 0
    dhcp: bool = False
    report_interval: int = 5
    agent_down_time: int = 15
    neutron_failover: bool = False

    def __post_init__(self) -> None:
        check_counts(self.nodes, self.routers, self.ha_routers)
        if self.report_interval < 1 or self.agent_down_time < 2 * self.report_interval:
            raise BadInputError(
                f"agent_down_time {self.agent_down_time} s must be at least twice "
                f"report_interval {self.report_interval} s (and report_interval >= 1)"
            )

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(node_host(k) for k in range(1, self.nodes + 1))

    @property
    def router_indexes(self) -> range:
        return range(1, self.routers + 1)

    def is_ha(self, index: int) -> bool:
        """The last ``ha_routers`` routers are HA (VRRP) routers."""
        return index > self.routers - self.ha_routers


def check_counts(nodes: int, routers: int, ha_routers: int) -> None:
    if not 1 <= nodes <= MAX_NODES:
        raise BadInputError(f"--nodes must be 1-{MAX_NODES}, got {nodes}")
    if not 0 <= routers <= MAX_ROUTERS:
        raise BadInputError(f"--routers must be 0-{MAX_ROUTERS}, got {routers}")
    if not 0 <= ha_routers <= routers:
        raise BadInputError(
            f"--ha-routers must be 0-{routers} (at most --routers), got {ha_routers}"
        )
    if ha_routers and nodes < 2:
        raise BadInputError("--ha-routers needs at least 2 nodes")


def node_host(index: int) -> str:
    return f"{PREFIX}n{index}"


def check_host(spec: StackSpec, host: str) -> str:
    """``host`` if it is one of the stack's nodes (``l3rs-n2`` or just ``n2``)."""
    full = host if host.startswith(PREFIX) else PREFIX + host
    if full not in spec.hosts:
        raise NotFoundError(f"no stack node {host!r}; {candidates_text(spec.hosts)}")
    return full


def fabric_port(host: str) -> str:
    """The node's veth end on the fabric switch (``n2`` for ``l3rs-n2``)."""
    return host.removeprefix(PREFIX)


def router_name(index: int) -> str:
    return f"r{index}"


def vm_namespace(index: int) -> str:
    return f"{PREFIX}vm{index}"


def tenant_cidr(index: int) -> str:
    return f"169.254.{index}.0/24"


def tenant_router_ip(index: int) -> str:
    return f"169.254.{index}.1"


def vm_ip(index: int) -> str:
    return f"169.254.{index}.10"


def vm_mac(index: int) -> str:
    """VM ``index``'s MAC address, also its Neutron port's (so dnsmasq knows it)."""
    return f"fa:16:3e:00:00:{index:02x}"


def tenant_pool(index: int) -> tuple[str, str]:
    """Addresses Neutron may hand out on tenant network ``index`` (not the VM's .10)."""
    return f"169.254.{index}.100", f"169.254.{index}.250"


def tenant_vlan(index: int) -> int:
    return VLAN_BASE + index


def owns_namespace(name: str) -> bool:
    """Whether a namespace belongs to the stack: its own, or a router namespace of its agents."""
    return name.startswith(PREFIX) or ("@" + PREFIX) in name


def transport_url(port: int) -> str:
    return f"rabbit://guest:guest@127.0.0.1:{port}/"


def clouds_yaml(api_port: int) -> str:
    """The clouds.yaml entry (noauth, loopback endpoint) for the stack's Neutron API."""
    return (
        "clouds:\n"
        f"  {CLOUD_NAME}:\n"
        "    auth_type: none\n"
        f"    network_endpoint_override: http://127.0.0.1:{api_port}/\n"
    )
