"""The configuration files of a real stack: Neutron server, agents, RabbitMQ. Pure.

Each function returns the text of one file for paths and ports it is given;
``StackLayout`` names every file and directory under the stack's own directory
(kept short: Open vSwitch's unix sockets must fit in 108 bytes).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from l3ha.lab.stack.spec import (
    BROKER_PORT_IN_NODE,
    MAX_ROUTERS,
    PHYS_BRIDGE,
    PHYSNET,
    VLAN_BASE,
    Ports,
    StackSpec,
    transport_url,
)


@dataclass(frozen=True)
class StackLayout:
    """Where everything of one stack lives."""

    root: Path

    @property
    def state_file(self) -> Path:
        return self.root / "stack.json"

    @property
    def etc(self) -> Path:
        return self.root / "etc"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def logs(self) -> Path:
        return self.root / "log"

    @property
    def mysql(self) -> Path:
        return self.root / "mysql"

    @property
    def rabbit(self) -> Path:
        return self.root / "rabbit"

    def node(self, host: str) -> Path:
        return self.root / host.rsplit("-", 1)[-1]

    def ovsdb_socket(self, host: str) -> Path:
        return self.node(host) / "db.sock"

    def server_config_args(self) -> list[str]:
        return [
            "--config-file",
            str(self.etc / "neutron.conf"),
            "--config-file",
            str(self.etc / "ml2_conf.ini"),
        ]


def neutron_conf(spec: StackSpec, layout: StackLayout, ports: Ports) -> str:
    return f"""[DEFAULT]
core_plugin = ml2
service_plugins = router
auth_strategy = noauth
transport_url = {transport_url(ports.rabbit)}
rpc_workers = 1
rpc_state_report_workers = 1
api_workers = 1
host = l3rs-controller
state_path = {layout.root / "server"}
api_paste_config = {layout.etc / "api-paste.ini"}
agent_down_time = {spec.agent_down_time}
allow_automatic_l3agent_failover = false
allow_automatic_dhcp_failover = false
router_scheduler_driver = neutron.scheduler.l3_agent_scheduler.LeastRoutersScheduler
l3_ha = false
max_l3_agents_per_router = 2
l3_ha_network_type = vlan
l3_ha_network_physical_name = {PHYSNET}
dhcp_agents_per_network = 1
network_auto_schedule = true
router_auto_schedule = true
debug = false
log_dir = {layout.logs}

{server_sections(layout.root, ports.mariadb)}

[oslo_messaging_rabbit]
rabbit_qos_prefetch_count = 0
"""


def server_sections(root: Path, mariadb_port: int) -> str:
    """The sections every lab Neutron server's neutron.conf shares (files under ``root``),
    without a line break after the last."""
    return f"""[quotas]
quota_router = -1
quota_network = -1
quota_subnet = -1
quota_port = -1

[database]
connection = mysql+pymysql://root@127.0.0.1:{mariadb_port}/neutron

[oslo_concurrency]
lock_path = {root / "lock"}"""


def ml2_conf() -> str:
    """ML2 with VLAN tenant networks. Neutron's own VLAN pool (what the HA network is given)
    lies above every lab tenant VLAN (VLAN_BASE + k, set explicitly), so that an HA network
    made while tenant networks are being created can never take one of theirs."""
    first_vlan, last_vlan = VLAN_BASE + MAX_ROUTERS + 1, VLAN_BASE + MAX_ROUTERS + 50
    return f"""[ml2]
type_drivers = flat,vlan
tenant_network_types = vlan
mechanism_drivers = openvswitch
extension_drivers = port_security

[ml2_type_flat]
flat_networks = {PHYSNET}

[ml2_type_vlan]
network_vlan_ranges = {PHYSNET}:{first_vlan}:{last_vlan}

[securitygroup]
enable_security_group = false
firewall_driver = noop
"""


def _agent_common(
    spec: StackSpec, layout: StackLayout, host: str, root_helper: str, extra: str = ""
) -> str:
    """What every agent's ini says, ``extra`` lines closing its [DEFAULT] section."""
    node = layout.node(host)
    return f"""[DEFAULT]
host = {host}
transport_url = {transport_url(BROKER_PORT_IN_NODE)}
state_path = {node / "state"}
log_dir = {node}
debug = false
{extra}
[agent]
report_interval = {spec.report_interval}
root_helper = {root_helper}

[oslo_concurrency]
lock_path = {node / "lock"}

[ovs]
ovsdb_connection = unix:{layout.ovsdb_socket(host)}
integration_bridge = br-int
datapath_type = netdev
"""


def ovs_agent_ini(spec: StackSpec, layout: StackLayout, host: str, root_helper: str) -> str:
    return (
        _agent_common(spec, layout, host, root_helper)
        + f"""bridge_mappings = {PHYSNET}:{PHYS_BRIDGE}
of_listen_address = 127.0.0.1

[securitygroup]
enable_security_group = false
firewall_driver = noop
"""
    )


def l3_agent_ini(spec: StackSpec, layout: StackLayout, host: str, root_helper: str) -> str:
    extra = (
        "interface_driver = openvswitch\n"
        "agent_mode = legacy\n"
        "enable_metadata_proxy = false\n"
        f"ha_confs_path = {layout.node(host) / 'ha_confs'}\n"
        "ha_vrrp_advert_int = 2\n"
        f"test_namespace_suffix = {host}\n"
    )
    return _agent_common(spec, layout, host, root_helper, extra)


def dhcp_agent_ini(spec: StackSpec, layout: StackLayout, host: str, root_helper: str) -> str:
    extra = (
        "interface_driver = openvswitch\n"
        "enable_isolated_metadata = false\n"
        "dhcp_driver = neutron.agent.linux.dhcp.Dnsmasq\n"
        # dnsmasq stays root: as nobody it could not re-read its hosts file on SIGHUP
        # when the stack's directory is under a private one (pytest's tmp_path).
        f"dnsmasq_config_file = {layout.node(host) / 'dnsmasq.conf'}\n"
        f"test_namespace_suffix = @{host}\n"
    )
    return _agent_common(spec, layout, host, root_helper, extra)


def rabbitmq_conf(ports: Ports) -> str:
    return (
        f"listeners.tcp.default = 127.0.0.1:{ports.rabbit}\n"
        "loopback_users = none\n"
        "log.console = false\n"
        "log.file.level = warning\n"
        "management_agent.disable_metrics_collector = true\n"
    )
