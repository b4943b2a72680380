"""Bring a real OVN stack up, open a running one, inject its faults, tear it down. I/O: all.

``ovn_stack_up`` starts OVN central, MariaDB and the ML2/OVN Neutron API, the
fabric and every gateway chassis, waits until each chassis is an alive "OVN
Controller Gateway agent", creates the routers and waits until the client
reaches every router's gateway address. Its state file says ``kind: ovn`` so
that ``l3ha lab stack down`` and the faults find the right stack; teardown
touches only ``l3ov-`` namespaces and processes it recorded or that name its
directory. ``OvnStack.l3ha_in_client`` runs l3ha where the gateways answer its probes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from l3ha.lab.stack import services
from l3ha.lab.stack.configs import StackLayout
from l3ha.lab.stack.ovncentral import OvnCentral, start_ovn_neutron
from l3ha.lab.stack.ovnchassis import Chassis, claim_ovn_fabric, make_ovn_fabric, ovn_fabric
from l3ha.lab.stack.ovnspec import (
    AGENT_TYPE,
    OVN_CLIENT_NS,
    STACK_KIND,
    OvnSpec,
    check_chassis,
    owns_ovn_namespace,
)
from l3ha.lab.stack.ovntopology import create_ovn_topology, reachable
from l3ha.lab.stack.processes import StateFile, wait_for
from l3ha.lab.stack.spec import CLOUD_NAME, clouds_yaml
from l3ha.lab.stack.stack import StackInputError, check_free, up_or_torn_down
from l3ha.lab.stack.teardown import TeardownReport, teardown
from l3ha.lab.stack.topology import NeutronHttp, wait_for_gateways

REQUIRED = ("ip", "mariadbd", "mariadb-install-db", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl",
            "ovn-northd", "ovn-controller", "ovn-nbctl", "ovn-sbctl", "ping")  # fmt: skip
AGENT_TIMEOUT_S = 120.0
GATEWAY_TIMEOUT_S = 120.0


def missing_programs() -> list[str]:
    return [p for p in REQUIRED if shutil.which(p) is None]


def check_can_start(directory: Path) -> None:
    missing = missing_programs()
    check_free("l3ha lab stack --ovn", missing, directory, "OVN stack", owns_ovn_namespace)


@dataclass(frozen=True)
class OvnStack:
    """A running OVN stack, as its state file records it."""

    spec: OvnSpec
    layout: StackLayout
    api_port: int

    @property
    def state(self) -> StateFile:
        return StateFile(self.layout.state_file)

    @property
    def central(self) -> OvnCentral:
        return OvnCentral(self.layout.root / "ovn", self.state)

    @property
    def api(self) -> NeutronHttp:
        return NeutronHttp(f"http://127.0.0.1:{self.api_port}")

    @property
    def routers(self) -> list[dict[str, Any]]:
        routers: list[dict[str, Any]] = self.state.data.get("routers", [])
        return routers

    def clouds_yaml(self) -> str:
        return clouds_yaml(self.api_port)

    def chassis(self, host: str) -> Chassis:
        host = check_chassis(self.spec, host)
        return Chassis(host, self.layout.root, self.state, self.central.sb)

    def kill_node(self, host: str) -> None:
        self.chassis(host).kill(ovn_fabric(self.state, self.layout.root))

    def revive_node(self, host: str) -> None:
        self.chassis(host).revive(ovn_fabric(self.state, self.layout.root))

    def restart_agents(self, host: str, with_ovs: bool = False) -> None:
        self.chassis(host).restart(with_ovs)

    def sb_outage(self, seconds: float) -> None:
        self.central.restart_sb(seconds)

    def primary(self, router: dict[str, Any]) -> str:
        """The chassis the router's gateway port is bound to now ("" if none)."""
        sb = self.central
        found = sb.sbctl("--bare", "--columns=chassis", "find", "Port_Binding",
                         f"logical_port=cr-lrp-{router['gateway_port']}").strip()  # fmt: skip
        return sb.sbctl("get", "Chassis", found, "name").strip().strip('"') if found else ""

    def l3ha_in_client(
        self, *argv: str, timeout: float = 300.0
    ) -> subprocess.CompletedProcess[str]:
        """``l3ha ARGV`` (this interpreter's) run in the client namespace, where the gateways
        answer, on the stack's cloud; its API must be relayed there (``relay.relay_into``)."""
        env = {**os.environ, "OS_CLIENT_CONFIG_FILE": str(self.layout.root / "clouds.yaml"),
               "OS_CLOUD": CLOUD_NAME}  # fmt: skip
        program = str(Path(sys.executable).parent / "l3ha")
        argv_ns = ["ip", "netns", "exec", OVN_CLIENT_NS, program, *argv]
        return subprocess.run(argv_ns, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)  # fmt: skip

    def answering(self) -> list[str]:
        """Gateway addresses the client reaches now."""
        return [r["gateway_ip"] for r in self.routers if reachable(r["gateway_ip"])]


def is_ovn_stack(directory: Path) -> bool:
    state = directory / "stack.json"
    return state.exists() and StateFile(state).data.get("kind") == STACK_KIND


def open_ovn_stack(directory: Path) -> OvnStack:
    layout = StackLayout(directory)
    if not is_ovn_stack(directory):
        raise StackInputError(f"no OVN stack is up in {directory}")
    data = StateFile(layout.state_file).data
    return OvnStack(OvnSpec(**data["spec"]), layout, int(data["api_port"]))


def ovn_stack_up(spec: OvnSpec, directory: Path) -> OvnStack:
    """Bring the OVN stack up; on any failure tear down what was made, then re-raise. The
    fabric namespace is made first, atomically: a second stack coming up at the same time
    is refused before it makes anything, so its teardown never removes this one's
    ``l3ov-`` namespaces."""
    check_can_start(directory)
    python = services.neutron_python()
    services.check_pymysql(python)
    if not claim_ovn_fabric():
        raise StackInputError(
            "another OVN stack is coming up on this machine (its l3ov- namespaces exist); "
            "run 'l3ha lab stack down' for it or wait"
        )
    layout = StackLayout(directory)
    (layout.root / "ovn" / "log").mkdir(parents=True, exist_ok=True)
    state = StateFile(layout.state_file)
    state.data.update(kind=STACK_KIND, spec=asdict(spec), python=str(python))
    state.save()
    return up_or_torn_down(layout, lambda: _bring_up(spec, layout, state, python), ovn_teardown)


def _bring_up(spec: OvnSpec, layout: StackLayout, state: StateFile, python: Path) -> OvnStack:
    central = OvnCentral(layout.root / "ovn", state)
    central.start()
    api_port = start_ovn_neutron(
        python, layout, state, central, host="l3ov-server", agent_down_time=spec.agent_down_time
    )
    state.data["api_port"] = api_port
    state.save()
    stack = OvnStack(spec, layout, api_port)
    fab = ovn_fabric(state, layout.root)
    make_ovn_fabric(fab)
    for host in spec.hosts:
        Chassis(host, layout.root, state, central.sb).up(fab)
    wait_for("every gateway chassis alive", lambda: _alive_agents(stack) >= spec.chassis,
             AGENT_TIMEOUT_S, interval=1.0)  # fmt: skip
    state = stack.state
    state.data["routers"] = create_ovn_topology(stack.api, spec)
    state.save()
    wait_for_gateways(OVN_CLIENT_NS, [r["gateway_ip"] for r in stack.routers], GATEWAY_TIMEOUT_S)
    (layout.root / "clouds.yaml").write_text(stack.clouds_yaml())
    return stack


def _alive_agents(stack: OvnStack) -> int:
    agents = stack.api.agents(AGENT_TYPE)
    return sum(1 for a in agents if a.get("alive") and a.get("host") in stack.spec.hosts)


def ovn_teardown(directory: Path) -> TeardownReport:
    """Everything of the OVN stack in ``directory``: recorded processes (chassis and central
    first, then the API and MariaDB), strays naming the directory, processes in ``l3ov-``
    namespaces, those namespaces and the directory. Never an ``l3rs-`` namespace."""
    return teardown(directory, owns=owns_ovn_namespace)
