"""The OVN stack's data plane: fabric, client and gateway chassis. I/O: ``ip``, OVS, spawns.

The fabric namespace runs one Open vSwitch with two switches, the underlay and
the external network. Each chassis namespace runs its own ovsdb-server,
userspace ovs-vswitchd (``datapath_type=netdev``) and ovn-controller: the
underlay veth sits on ``br-ul``, whose internal port carries the chassis'
geneve address (userspace tunnels leave through an OVS bridge), the external
veth on ``br-ex`` (``physnet1``). Killing a chassis takes both its veths off
the fabric and SIGKILLs its daemons; reviving starts them on the same files.
Restarting its agents (an upgrade) stops ovn-controller with SIGTERM (its
chassis stays in the southbound) and, with Open vSwitch, its ovsdb-server and
ovs-vswitchd too, then starts them again; the links stay up.
"""

from __future__ import annotations

from pathlib import Path

from l3ha.lab.netns import LabCommandError, add_namespace, ip
from l3ha.lab.stack.fabric import fabric, plug
from l3ha.lab.stack.ovncentral import OVN_PHYSNET
from l3ha.lab.stack.ovnspec import (
    EXTERNAL_BRIDGE,
    EXTERNAL_SWITCH,
    OVN_CLIENT_NS,
    OVN_FABRIC_NS,
    UNDERLAY_BRIDGE,
    UNDERLAY_SWITCH,
    chassis_index,
    fabric_ports,
    underlay_ip,
)
from l3ha.lab.stack.processes import StateFile, spawn, wait_for
from l3ha.lab.stack.spec import CLIENT_CIDR
from l3ha.lab.stack.vswitch import Ovs


def ovn_fabric(state: StateFile, root: Path) -> Ovs:
    return fabric(state, root, OVN_FABRIC_NS)


def claim_ovn_fabric() -> bool:
    """Make the fabric namespace, the stack's claim on the ``l3ov-`` names: False when it
    exists (another OVN stack is up or coming up on this machine)."""
    try:
        add_namespace(OVN_FABRIC_NS)
    except LabCommandError:
        return False
    return True


def make_ovn_fabric(fab: Ovs) -> None:
    """Both switches in the fabric namespace (``claim_ovn_fabric`` made it), and the
    client on the external one."""
    fab.start()
    fab.add_bridge(UNDERLAY_SWITCH)
    fab.add_bridge(EXTERNAL_SWITCH)
    add_namespace(OVN_CLIENT_NS)
    plug(fab, "client", OVN_CLIENT_NS, "eth0", switch=EXTERNAL_SWITCH)
    ip("-n", OVN_CLIENT_NS, "address", "add", CLIENT_CIDR, "dev", "eth0")


class Chassis:
    """Gateway chassis ``host``: its namespace, Open vSwitch and ovn-controller."""

    def __init__(self, host: str, root: Path, state: StateFile, sb_socket: Path) -> None:
        self.host, self.state, self.sb = host, state, sb_socket
        self.dir = root / host.removeprefix("l3ov-")
        self.ovs = Ovs(host, self.dir, state, host)

    def up(self, fab: Ovs) -> None:
        """Namespace, veths, Open vSwitch, OVN settings and ovn-controller."""
        add_namespace(self.host)
        underlay, external = fabric_ports(self.host)
        plug(fab, underlay, self.host, "ul", switch=UNDERLAY_SWITCH)
        plug(fab, external, self.host, "ex", switch=EXTERNAL_SWITCH)
        self.ovs.start()
        self.ovs.add_bridge(UNDERLAY_BRIDGE, "ul")
        self.ovs.add_bridge(EXTERNAL_BRIDGE, "ex")
        index = chassis_index(self.host)
        self.ovs.vsctl(
            "set", "Open_vSwitch", ".",
            f"external_ids:system-id={self.host}", f"external_ids:hostname={self.host}",
            f"external_ids:ovn-remote=unix:{self.sb}", "external_ids:ovn-encap-type=geneve",
            f"external_ids:ovn-encap-ip={underlay_ip(index)}",
            "external_ids:ovn-bridge-datapath-type=netdev",
            "external_ids:ovn-cms-options=enable-chassis-as-gw",
            f"external_ids:ovn-bridge-mappings={OVN_PHYSNET}:{EXTERNAL_BRIDGE}",
        )  # fmt: skip
        self.address_underlay()
        self.start_controller()

    def address_underlay(self) -> None:
        """The geneve address on br-ul's internal port (made anew by each vswitchd)."""
        wait_for(f"{UNDERLAY_BRIDGE} in {self.host}", self._has_underlay_port, 30)
        cidr = f"{underlay_ip(chassis_index(self.host))}/24"
        ip("-n", self.host, "address", "replace", cidr, "dev", UNDERLAY_BRIDGE)
        ip("-n", self.host, "link", "set", UNDERLAY_BRIDGE, "up")

    def _has_underlay_port(self) -> bool:
        try:
            ip("-n", self.host, "link", "show", UNDERLAY_BRIDGE)
        except LabCommandError:
            return False
        return True

    def start_controller(self) -> None:
        env = {**self.ovs.env, "OVN_RUNDIR": str(self.dir), "OVN_LOGDIR": str(self.dir)}
        argv = ["ovn-controller", f"unix:{self.ovs.socket}", "--no-chdir", "-vconsole:off",
                f"--log-file={self.dir / 'ovn-controller.log'}"]  # fmt: skip
        pid = spawn("ovn-controller", argv, self.dir, namespace=self.host, env=env)
        self.state.record(f"{self.host}/controller", pid)

    def kill(self, fab: Ovs) -> None:
        """Links cut, then every daemon of the chassis SIGKILLed (a crash)."""
        for port in fabric_ports(self.host):
            fab.vsctl("--if-exists", "del-port", port)
        self.state.kill(*(f"{self.host}/{name}" for name in ("controller", "vswitchd", "ovsdb")))

    def restart(self, with_ovs: bool) -> None:
        """ovn-controller (and with ``with_ovs`` Open vSwitch) stopped gracefully and started
        again on the same files, as a package upgrade would."""
        names = ("controller", "vswitchd", "ovsdb") if with_ovs else ("controller",)
        self.state.stop(*(f"{self.host}/{name}" for name in names))
        if with_ovs:
            self.ovs.start()
            self.address_underlay()
        self.start_controller()

    def revive(self, fab: Ovs) -> None:
        """Daemons started on the same files, geneve address back, links back."""
        self.ovs.start()
        self.address_underlay()
        self.start_controller()
        switches = (UNDERLAY_SWITCH, EXTERNAL_SWITCH)
        for switch, port in zip(switches, fabric_ports(self.host), strict=True):
            fab.vsctl("--may-exist", "add-port", switch, port)
