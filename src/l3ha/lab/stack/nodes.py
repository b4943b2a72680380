"""The network nodes of a stack: namespace, Open vSwitch and agents. I/O: ``ip``, spawns.

A node is a namespace with its own Open vSwitch (``br-phys``, whose port
``phys0`` is a veth into the fabric), a broker relay, neutron-openvswitch-agent
and the per-host L3 agent (neutron's fullstack subclass, which suffixes router
namespaces with ``@HOST``; the program is named ``neutron-l3-agent`` so that its
iptables chains come out right), and with DHCP neutron's fullstack DHCP agent,
which suffixes its ``qdhcp-*`` namespaces with ``@HOST`` too. Roles in the state
file are ``HOST/ROLE``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from l3ha.lab.netns import add_namespace, delete_namespace, kill_now
from l3ha.lab.stack.configs import StackLayout, dhcp_agent_ini, l3_agent_ini, ovs_agent_ini
from l3ha.lab.stack.fabric import cut_link, fabric, plug, restore_link
from l3ha.lab.stack.processes import StateFile, pids_naming, spawn, stop_groups
from l3ha.lab.stack.services import NEUTRON_ENV, neutron_bin
from l3ha.lab.stack.spec import (
    BROKER_PORT_IN_NODE,
    PHYS_BRIDGE,
    PHYS_PORT,
    Ports,
    StackSpec,
    fabric_port,
)
from l3ha.lab.stack.vswitch import ROLES as OVS_ROLES
from l3ha.lab.stack.vswitch import Ovs

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
AGENT_ROLES = ("l3", "ovs-agent", "dhcp")
GRACEFUL_ROLES = ("l3", "dhcp")  # awaited on stop; the OVS agent is not (see stop_agents)
AGENT_PROGRAM = """#!{python}
import sys
from {module} import main
sys.exit(main())
"""
#: neutron's own per-host agents (shipped in its wheel): program name -> module.
PER_HOST_AGENTS = {
    "neutron-l3-agent": "neutron.tests.common.agents.l3_agent",
    "neutron-dhcp-agent": "neutron.tests.fullstack.agents.dhcp_agent",
}


class Node:
    """One network node of the stack."""

    def __init__(
        self, host: str, spec: StackSpec, layout: StackLayout, state: StateFile, python: Path
    ) -> None:
        self.host, self.spec, self.layout, self.state = host, spec, layout, state
        self.python = python
        self.dir = layout.node(host)
        self.ovs = Ovs(host, self.dir, state, host)
        self.fab = fabric(state, layout.root)

    def role(self, name: str) -> str:
        return f"{self.host}/{name}"

    def up(self, ports: Ports) -> None:
        """Namespace, fabric link, Open vSwitch, configuration, relay and agents."""
        add_namespace(self.host)
        plug(self.fab, fabric_port(self.host), self.host, PHYS_PORT)
        self.start_ovs()
        self.write_configs()
        self.start_relay(ports)
        self.start_agents()

    def start_ovs(self) -> None:
        self.ovs.start()
        self.ovs.add_bridge(PHYS_BRIDGE, PHYS_PORT)

    def write_configs(self) -> None:
        helper = f"env PATH={self.python.parent}:{SYSTEM_PATH}"
        for name, render in (
            ("ovs_agent.ini", ovs_agent_ini),
            ("l3_agent.ini", l3_agent_ini),
            ("dhcp_agent.ini", dhcp_agent_ini),
        ):
            (self.dir / name).write_text(render(self.spec, self.layout, self.host, helper))
        (self.dir / "dnsmasq.conf").write_text("user=root\n")

    def start_relay(self, ports: Ports) -> None:
        argv = [sys.executable, "-m", "l3ha.lab.stack.relay", self.host]
        argv += [str(BROKER_PORT_IN_NODE), str(ports.rabbit)]
        self.state.record(self.role("relay"), spawn("relay", argv, self.dir))

    def _spawn_agent(self, role: str, program: str, ini: str) -> None:
        env = {**NEUTRON_ENV, "PATH": f"{self.python.parent}:{SYSTEM_PATH}", **self.ovs.env}
        argv = [program, *self.layout.server_config_args(), "--config-file", str(self.dir / ini)]
        pid = spawn(role, argv, self.dir, namespace=self.host, env=env)
        self.state.record(self.role(role), pid)

    def start_agents(self) -> None:
        """The OVS agent, the per-host L3 agent and (with --dhcp) the DHCP agent."""
        ovs_agent = neutron_bin(self.python, "neutron-openvswitch-agent")
        self._spawn_agent("ovs-agent", ovs_agent, "ovs_agent.ini")
        self._spawn_agent("l3", str(self.program("neutron-l3-agent")), "l3_agent.ini")
        if self.spec.dhcp:
            self._spawn_agent("dhcp", str(self.program("neutron-dhcp-agent")), "dhcp_agent.ini")

    def program(self, name: str) -> Path:
        """A per-host agent's program in DIR/bin, written on first use."""
        program = self.layout.bin / name
        if not program.exists():
            program.parent.mkdir(parents=True, exist_ok=True)
            source = AGENT_PROGRAM.format(python=self.python, module=PER_HOST_AGENTS[name])
            program.write_text(source)
            program.chmod(0o755)
        return program

    def recorded(self, roles: tuple[str, ...]) -> list[int]:
        return [self.state.pids[self.role(r)] for r in roles if self.role(r) in self.state.pids]

    def stop_agents(self) -> None:
        """Stop the agents gracefully (SIGTERM, all at once), as a service restart would.

        The L3 and DHCP agents get up to 15 s to finish. The OVS agent quits its loop
        within seconds of SIGTERM but then hangs closing its AMQP channels until killed,
        so it is killed once they are done (it held every restart up for the whole 15 s).
        """
        graceful = self.recorded(GRACEFUL_ROLES)
        agents = self.state.forget(*map(self.role, AGENT_ROLES))
        stop_groups(agents, grace=15, awaited=graceful)

    def kill(self) -> None:
        """The node dies: its link cut, every process of it killed at once.

        Besides the recorded ones, that is every process naming the node's directory:
        the agents' dnsmasq, keepalived and privsep helpers. A dnsmasq left running
        would be taken for the live one by the DHCP agent once the node is revived.
        """
        cut_link(self.fab, self.host)
        self.state.kill(*map(self.role, (*AGENT_ROLES, "relay", *OVS_ROLES)))
        kill_now(pids_naming(f"{self.dir}/"))

    def revive(self, ports: Ports, stale_namespaces: list[str]) -> None:
        """The node boots again: no router namespaces, OVS and agents started, link back."""
        for namespace in stale_namespaces:
            delete_namespace(namespace)
        self.start_ovs()
        self.start_relay(ports)
        self.start_agents()
        restore_link(self.fab, self.host)
