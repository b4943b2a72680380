"""Bring a real stack up, open a running one, and inject its faults. I/O: everything below it.

``stack_up`` checks its input, then starts MariaDB, RabbitMQ, the Neutron
servers, the fabric and every node, creates the routers and waits until every
VM reaches its router; if anything fails it tears down what it made.
``open_stack`` reads a running stack's state file for the fault commands;
``vip_holders`` reads which copies of an HA router hold its address.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypeVar

from l3ha.errors import UserError
from l3ha.lab.netns import list_namespaces
from l3ha.lab.stack import services
from l3ha.lab.stack.configs import StackLayout, ml2_conf, neutron_conf
from l3ha.lab.stack.fabric import fabric, make_fabric, make_vm
from l3ha.lab.stack.nodes import Node
from l3ha.lab.stack.processes import StackError, StateFile, free_ports
from l3ha.lab.stack.spec import (
    CLIENT_NS,
    CLOUD_NAME,
    Ports,
    StackSpec,
    check_host,
    clouds_yaml,
    owns_namespace,
)
from l3ha.lab.stack.teardown import teardown
from l3ha.lab.stack.topology import (
    NeutronHttp,
    create_topology,
    gateway_addresses,
    wait_for_agents,
    wait_for_gateways,
    wait_for_routers,
)

REQUIRED_PROGRAMS = (
    "ip",
    "mariadbd",
    "mariadb-install-db",
    "epmd",
    "ovsdb-server",
    "ovs-vswitchd",
    "ovs-vsctl",
    "ping",
)
AGENT_TIMEOUT_S = 180.0
ROUTER_TIMEOUT_S = 240.0
T = TypeVar("T")


class StackInputError(UserError):
    """The stack cannot be brought up or changed as asked (exit 2, nothing changed)."""


def check_can_start(directory: Path) -> None:
    """Root, the programs the stack runs, and no stack already up."""
    missing = [p for p in REQUIRED_PROGRAMS if shutil.which(p) is None]
    if not services.RABBIT_BIN.exists():
        missing.append("rabbitmq-server")
    check_free("l3ha lab stack", missing, directory, "stack", owns_namespace)


def check_free(
    command: str, missing: list[str], directory: Path, kind: str, owns: Callable[[str], bool]
) -> None:
    """Root, no ``missing`` program, no stack already up in ``directory`` and no namespace
    the stack would own (``owns``); else one line naming the first problem."""
    if os.geteuid() != 0:
        raise StackInputError(f"{command} needs root (network namespaces, Open vSwitch)")
    if missing:
        raise StackInputError(
            f"missing programs: {', '.join(missing)} (scripts/install-system-deps.sh installs them)"
        )
    if (directory / "stack.json").exists():
        raise StackInputError(f"a stack is already up in {directory}; run 'l3ha lab stack down'")
    leftovers = [n for n in list_namespaces() if owns(n)]
    if leftovers:
        raise StackInputError(
            f"{kind} namespaces already exist ({leftovers[0]} ...); run 'l3ha lab stack down'"
        )


@dataclass(frozen=True)
class Stack:
    """A running stack, as its state file records it."""

    spec: StackSpec
    layout: StackLayout
    ports: Ports
    python: Path

    @property
    def state(self) -> StateFile:
        return StateFile(self.layout.state_file)

    @property
    def api(self) -> NeutronHttp:
        return NeutronHttp(f"http://127.0.0.1:{self.ports.api}")

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports.api}/"

    def clouds_yaml(self) -> str:
        return clouds_yaml(self.ports.api)

    def node(self, host: str) -> Node:
        return Node(check_host(self.spec, host), self.spec, self.layout, self.state, self.python)

    def broker_outage(
        self, seconds: float, late_host: str | None = None, late_by: float = 0.0
    ) -> tuple[float, float]:
        """Stop RabbitMQ for ``seconds``, then start it; (stopped, listening), monotonic.

        With ``late_host``, that node's link to the broker stays cut ``late_by`` seconds
        longer: its agents reconnect after the others, as they do in the field.
        """
        state = self.state
        late = self.node(late_host) if late_host else None
        if late is not None:
            late.state.stop(late.role("relay"), grace=2)
        state.stop("rabbit", grace=20)
        stopped = time.monotonic()
        time.sleep(max(0.0, seconds - (time.monotonic() - stopped)))
        services.start_rabbit(self.layout, state, self.ports)
        listening = time.monotonic()
        if late is not None:
            time.sleep(late_by)
            late.start_relay(self.ports)
        return stopped, listening

    def start_neutron_failover(self) -> None:
        """Neutron's periodic workers with allow_automatic_l3agent_failover = True."""
        services.start_periodic(self.python, self.layout, self.state)

    def stop_neutron_failover(self) -> None:
        self.state.stop("periodic")

    def watch_command(self, state_dir: Path, *options: str) -> tuple[list[str], dict[str, str]]:
        """argv and environment of ``l3ha watch`` on this stack, timed like its agents."""
        argv = [str(Path(sys.executable).parent / "l3ha"), "watch", "--os-cloud", CLOUD_NAME]
        argv += ["--report-interval", str(self.spec.report_interval)]
        argv += ["--dead-after", str(self.spec.agent_down_time), "--interval", "1"]
        argv += ["--state-dir", str(state_dir), *options]
        return argv, {"OS_CLIENT_CONFIG_FILE": str(self.layout.root / "clouds.yaml")}

    def kill_node(self, host: str) -> None:
        self.node(host).kill()

    def restart_agents(self, host: str, with_ovs: bool = False) -> None:
        """Stop the node's agents, with ``with_ovs`` restart its ovs-vswitchd, start them."""
        node = self.node(host)
        node.stop_agents()
        if with_ovs:
            node.ovs.restart_vswitchd()
        node.start_agents()

    def revive_node(self, host: str) -> None:
        node = self.node(host)
        stale = [n for n in list_namespaces() if n.endswith("@" + node.host)]
        node.revive(self.ports, stale)


def open_stack(directory: Path) -> Stack:
    """The stack whose state file is in ``directory``; a one-line error if there is none."""
    layout = StackLayout(directory)
    if not layout.state_file.exists():
        raise StackInputError(f"no stack is up in {directory} (no stack.json)")
    data = StateFile(layout.state_file).data
    return Stack(StackSpec(**data["spec"]), layout, Ports(**data["ports"]), Path(data["python"]))


def stack_up(spec: StackSpec, directory: Path) -> Stack:
    """Bring the whole stack up; on any failure tear down what was made, then re-raise."""
    check_can_start(directory)
    python = services.neutron_python()
    services.check_pymysql(python)
    layout = StackLayout(directory)
    for path in (layout.root, layout.etc, layout.logs):
        path.mkdir(parents=True, exist_ok=True)
    ports = Ports(*free_ports(5))
    state = StateFile(layout.state_file)
    state.data.update(spec=asdict(spec), ports=asdict(ports), python=str(python))
    state.save()
    stack = Stack(spec, layout, ports, python)
    up_or_torn_down(layout, lambda: _bring_up(stack, state), teardown)
    return stack


def up_or_torn_down(
    layout: StackLayout, bring_up: Callable[[], T], tear_down: Callable[[Path], object]
) -> T:
    """``bring_up()``; on any failure copy the stack's logs to DIR.failed (replacing an
    older copy), ``tear_down`` the directory, then re-raise."""
    try:
        return bring_up()
    except BaseException as exc:
        kept = layout.root.with_name(layout.root.name + ".failed")
        shutil.rmtree(kept, ignore_errors=True)
        for log in [*layout.root.rglob("*.out"), *layout.root.rglob("*.log")]:
            target = kept / log.relative_to(layout.root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(log, target)
        tear_down(layout.root)
        if isinstance(exc, StackError):
            raise StackError(f"{exc} (logs kept in {kept})") from exc
        raise


def _bring_up(stack: Stack, state: StateFile) -> None:
    """Each phase in turn; its seconds are kept in the state file (``bring_up``)."""
    spec, layout, ports, python = stack.spec, stack.layout, stack.ports, stack.python
    timer = PhaseTimer(state)
    # RabbitMQ starts while MariaDB is installed. (The nodes do not start before the API
    # listens: agents started before the RPC server consumes lose their first report to
    # a 60 s RPC timeout; every agent was alive only after 115 s.)
    services.start_rabbit(layout, state, ports, wait=False)
    services.start_mariadb(layout, state, ports)
    services.wait_for_rabbit(ports)
    timer.done("mariadb and rabbitmq")
    services.prepare_server(python, layout, neutron_conf(spec, layout, ports), ml2_conf())
    timer.done("neutron schema")
    services.start_servers(python, layout, state, ports)
    services.wait_for_api(ports)
    if spec.neutron_failover:
        services.start_periodic(python, layout, state)
    fab = fabric(state, layout.root)
    make_fabric(fab)
    for host in spec.hosts:
        Node(host, spec, layout, state, python).up(ports)
    timer.done("servers and nodes started")
    wait_for_agents(stack.api, spec, AGENT_TIMEOUT_S)
    timer.done("agents alive")
    state.data["routers"] = create_topology(stack.api, spec)
    state.save()
    for index in spec.router_indexes:
        make_vm(fab, index)
    timer.done("topology created")
    wait_for_routers(spec, ROUTER_TIMEOUT_S)
    wait_for_gateways(CLIENT_NS, gateway_addresses(stack.api), ROUTER_TIMEOUT_S)
    timer.done("routers answer")
    (layout.root / "clouds.yaml").write_text(stack.clouds_yaml())


class PhaseTimer:
    """Seconds of each bring-up phase, recorded in the state file as they end."""

    def __init__(self, state: StateFile) -> None:
        self.state = state
        self.last = time.monotonic()
        self.phases: dict[str, float] = state.data.setdefault("bring_up", {})

    def done(self, phase: str) -> None:
        now = time.monotonic()
        self.phases[phase] = round(now - self.last, 1)
        self.last = now
        self.state.save()


def vip_holders(stack: Stack, router_id: str, vip: str) -> list[str]:
    """Hosts whose copy of the router holds ``vip`` right now (read inside the namespace).

    The agents create router namespaces from their own mount namespace (``ip netns
    exec`` gives them one), so the namespace is entered through the L3 agent's.
    """
    holders = []
    for host in stack.spec.hosts:
        pid = stack.state.pids.get(f"{host}/l3")
        if pid is None:
            continue
        argv = ["nsenter", f"--mount=/proc/{pid}/ns/mnt", "ip", "netns", "exec",
                f"qrouter-{router_id}@{host}", "ip", "-4", "-o", "addr", "show"]  # fmt: skip
        result = subprocess.run(argv, capture_output=True, text=True, check=False)
        if f" {vip}/" in result.stdout:
            holders.append(host)
    return holders
