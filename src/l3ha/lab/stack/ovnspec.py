"""What a real OVN stack consists of: names, hosts and addresses. Pure.

An OVN stack owns every network namespace whose name starts with ``l3ov-``
(never ``l3rs-``, the ML2/OVS stack's): gateway chassis ``k`` is host and
namespace ``l3ov-gwK``; namespace ``l3ov-fab`` holds the fabric's two switches
(``ul0``, the geneve underlay, 169.254.200.0/24 with chassis ``k`` at .K; and
``ext0``, the flat external network on ``physnet1``); the client namespace
``l3ov-client`` sits on the external network at 169.254.96.1/20. Router ``k``
has its gateway on the external network and a geneve tenant network, the
``k``-th /28 of 169.254.112.0/20 (above the external network; no namespace
holds it, the client only reaches gateway addresses): up to 255 routers.
"""

from __future__ import annotations

from dataclasses import dataclass

from l3ha.errors import BadInputError, NotFoundError, candidates_text

OVN_PREFIX = "l3ov-"
OVN_FABRIC_NS = OVN_PREFIX + "fab"
OVN_CLIENT_NS = OVN_PREFIX + "client"
UNDERLAY_SWITCH = "ul0"
EXTERNAL_SWITCH = "ext0"
UNDERLAY_BRIDGE = "br-ul"
EXTERNAL_BRIDGE = "br-ex"
MAX_CHASSIS = 8
MAX_OVN_ROUTERS = 255
TENANT_BLOCK = (112, 16)  # 169.254.112.0/20: 16 /28s in each of 16 /24s
DEFAULT_CHASSIS = 3
STACK_KIND = "ovn"
AGENT_TYPE = "OVN Controller Gateway agent"


@dataclass(frozen=True)
class OvnSpec:
    """How many gateway chassis and routers the OVN stack has."""

    chassis: int = DEFAULT_CHASSIS
    routers: int = 1
    agent_down_time: int = 15

    def __post_init__(self) -> None:
        if not 1 <= self.chassis <= MAX_CHASSIS:
            raise BadInputError(f"--nodes must be 1-{MAX_CHASSIS}, got {self.chassis}")
        if not 0 <= self.routers <= MAX_OVN_ROUTERS:
            raise BadInputError(f"--routers must be 0-{MAX_OVN_ROUTERS}, got {self.routers}")

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(chassis_host(k) for k in range(1, self.chassis + 1))

    @property
    def router_indexes(self) -> range:
        return range(1, self.routers + 1)


def chassis_host(index: int) -> str:
    return f"{OVN_PREFIX}gw{index}"


def chassis_index(host: str) -> int:
    return int(host.removeprefix(OVN_PREFIX + "gw"))


def check_chassis(spec: OvnSpec, host: str) -> str:
    """``host`` if it is one of the stack's chassis (``l3ov-gw2`` or just ``gw2``)."""
    full = host if host.startswith(OVN_PREFIX) else OVN_PREFIX + host
    if full not in spec.hosts:
        raise NotFoundError(f"no OVN stack chassis {host!r}; {candidates_text(spec.hosts)}")
    return full


def ovn_tenant_cidr(index: int) -> str:
    """Router ``index``'s tenant subnet: the ``index``-th /28 of 169.254.112.0/20."""
    first, per_octet = TENANT_BLOCK
    return f"169.254.{first + index // per_octet}.{index % per_octet * 16}/28"


def ovn_tenant_router_ip(index: int) -> str:
    """The router's address on its tenant subnet (the subnet's first)."""
    network = ovn_tenant_cidr(index).split("/", 1)[0]
    head, last = network.rsplit(".", 1)
    return f"{head}.{int(last) + 1}"


def underlay_ip(index: int) -> str:
    return f"169.254.200.{index}"


def fabric_ports(host: str) -> tuple[str, str]:
    """The chassis' veth ends on the underlay and external switches (``ul2``, ``ex2``)."""
    index = chassis_index(host)
    return f"ul{index}", f"ex{index}"


def owns_ovn_namespace(name: str) -> bool:
    return name.startswith(OVN_PREFIX)
