"""What a lab consists of: names, addresses, priorities, keepalived configuration. Pure.

A lab called NAME owns every network namespace whose name starts with
``l3ha-lab-NAME-``: one per network node (``n1``..``nN``), one client
(``client``) and one bridge (``br``) that joins them with veth pairs. All
addresses are in 169.254.0.0/16. Lab router ``rK`` has VRRP id K and VIP
``169.254.100.K/24``; every node runs one VRRP instance per router, state
BACKUP with nopreempt like Neutron, and priorities rotated so that routers'
first masters spread over the nodes. With ``heal_garp`` (the default; Neutron's
template lacks it) a master that hears a lower-priority master after a
partition heals re-sends gratuitous ARPs, and the yielding master sends one
last advert first; without it clients keep the yielding node's MAC until
their ARP entry expires (measured: about 1.7 s of ICMP outage).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from l3ha.errors import BadInputError, NotFoundError, candidates_text

NAMESPACE_PREFIX = "l3ha-lab-"
DEVICE = "eth0"
BRIDGE = "br0"
CLIENT = "client"
BRIDGE_NS_ROLE = "br"
NODE_NETWORK_PREFIX = 16
CLIENT_ADDRESS = "169.254.1.250"
MAX_NODES = 9
MAX_ROUTERS = 50
_NAME = re.compile(r"^[a-z0-9]{1,16}$")


def check_lab_name(name: str) -> str:
    """Lab names are 1-16 lowercase letters/digits, so one lab's prefix never matches another's."""
    if not _NAME.match(name):
        raise BadInputError(f"invalid lab name {name!r}: use 1-16 lowercase letters or digits")
    return name


@dataclass(frozen=True)
class LabSpec:
    """The shape of one lab."""

    name: str = "main"
    nodes: int = 3
    routers: int = 2
    advert_int: float = 1.0
    heal_garp: bool = True

    def __post_init__(self) -> None:
        check_lab_name(self.name)
        if not 2 <= self.nodes <= MAX_NODES:
            raise BadInputError(f"--nodes must be between 2 and {MAX_NODES}, not {self.nodes}")
        if not 1 <= self.routers <= MAX_ROUTERS:
            raise BadInputError(f"--routers must be between 1 and {MAX_ROUTERS}")
        if not 0.01 <= self.advert_int <= 40.0 or round(self.advert_int, 2) != self.advert_int:
            raise BadInputError(
                "--advert-int must be 0.01-40 seconds in hundredths (VRRPv3 centiseconds)"
            )

    @property
    def prefix(self) -> str:
        return namespace_prefix(self.name)

    @property
    def node_names(self) -> list[str]:
        return [f"n{i}" for i in range(1, self.nodes + 1)]

    @property
    def router_names(self) -> list[str]:
        return [f"r{i}" for i in range(1, self.routers + 1)]

    def namespace(self, role: str) -> str:
        """The namespace of a node (``n2``), the client or the bridge (``br``)."""
        return f"{self.prefix}{role}"

    def namespaces(self) -> list[str]:
        return [self.namespace(r) for r in [*self.node_names, CLIENT, BRIDGE_NS_ROLE]]

    def check_node(self, node: str) -> str:
        if node not in self.node_names:
            raise NotFoundError(
                f"unknown node {node!r}; nodes are: {candidates_text(self.node_names)}"
            )
        return node

    def node_address(self, node: str) -> str:
        return f"169.254.1.{int(node[1:])}"

    def vip(self, router: str) -> str:
        return f"169.254.100.{int(router[1:])}/24"

    def priority(self, router: str, node: str) -> int:
        """Router rK's first choice is node ((K-1) mod N)+1, then the next ones."""
        r, n = int(router[1:]) - 1, int(node[1:]) - 1
        return 100 - 10 * ((n - r) % self.nodes)

    def master_down_interval(self, router: str, node: str) -> float:
        """Seconds ``node`` waits without adverts before it takes ``router`` over (VRRPv3)."""
        return master_down_interval(self.advert_int, self.priority(router, node))


def master_down_interval(advert_int: float, priority: int) -> float:
    """VRRPv3 (RFC 5798): 3 x advert + skew, with skew = (256 - priority) x advert / 256."""
    return 3 * advert_int + (256 - priority) * advert_int / 256


def namespace_prefix(name: str) -> str:
    return f"{NAMESPACE_PREFIX}{check_lab_name(name)}-"


def owned_by(namespace: str, name: str) -> bool:
    """Whether ``namespace`` belongs to lab ``name`` (and not to a lab with a longer name)."""
    prefix = namespace_prefix(name)
    return namespace.startswith(prefix) and "-" not in namespace[len(prefix) :]


def keepalived_config(spec: LabSpec, node: str) -> str:
    """keepalived.conf for one node: one VRRPv3 instance per lab router."""
    lines = [
        "global_defs {",
        f"    router_id {spec.namespace(node)}",
        "    vrrp_version 3",
        "    vrrp_garp_master_delay 1",
    ]
    if spec.heal_garp:
        lines += ["    vrrp_garp_lower_prio_repeat 1", "    vrrp_higher_prio_send_advert true"]
    lines.append("}")
    for router in spec.router_names:
        lines += [
            "",
            f"vrrp_instance {router} {{",
            "    state BACKUP",
            f"    interface {DEVICE}",
            f"    virtual_router_id {int(router[1:])}",
            f"    priority {spec.priority(router, node)}",
            "    nopreempt",
            f"    advert_int {spec.advert_int:g}",
            "    virtual_ipaddress {",
            f"        {spec.vip(router)} dev {DEVICE}",
            "    }",
            "}",
        ]
    return "\n".join(lines) + "\n"
