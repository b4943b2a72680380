"""``l3ha lab stack up/down``, HA routers and DHCP: a stack made through the CLI serves, survives
a node death, and goes.

One stack for the module, made and removed through the CLI as an operator would (3
nodes, 3 routers: r1 legacy, r2 and r3 HA with real keepalived in the router namespaces,
2 replicas each; ``--dhcp``: a DHCP agent per node, dhcp_agents_per_network 1, DHCP on
every tenant network, each VM a Neutron port with its MAC and address; agent_down_time
15 s, report_interval 5 s). In order: ``up`` serves every router (a second ``up`` is
refused); the node holding an HA router's VIP dies: VRRP moves the VIP by itself, ``l3ha
watch`` replaces the replica on the dead node with one on the live node, ``l3ha ha
audit`` agrees with the real VIP holders read inside the router namespaces, and ``l3ha
dhcp evacuate`` moves the dead node's networks make before break (every network ends on
a live agent with an ACTIVE DHCP port there, and each VM's DHCPDISCOVER, sent by
``l3ha.lab.stack.dhcp_probe`` inside the VM namespace, is answered by a live node's
dnsmasq); ``down`` leaves no namespace, process or file. Bad input and a failed bring-up
need no stack of their own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.realstack.conftest import leftovers, needs_stack, sweep

from l3ha.lab.stack.dhcp import (
    dhcp_agents,
    dhcp_offer,
    dhcp_port_active_on,
    dhcp_server_host,
    networks_on,
    tenant_networks,
)
from l3ha.lab.stack.processes import wait_for
from l3ha.lab.stack.reach import Pingers
from l3ha.lab.stack.scenario import Watch
from l3ha.lab.stack.spec import (
    CLIENT_NS,
    CLOUD_NAME,
    StackSpec,
    tenant_router_ip,
    vm_ip,
    vm_namespace,
)
from l3ha.lab.stack.stack import Stack, open_stack, vip_holders
from l3ha.lab.stack.teardown import teardown
from l3ha.lab.stack.topology import pings

pytestmark = needs_stack

UP_ARGS = ["--nodes", "3", "--routers", "3", "--ha-routers", "2", "--dhcp"]
ROUTERS = ["r1", "r2", "r3"]


def l3ha(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "l3ha"), *args],
        capture_output=True, text=True, timeout=timeout, check=False, env=os.environ,
    )  # fmt: skip


def routers_of(endpoint: str) -> list[dict[str, object]]:
    with urllib.request.urlopen(endpoint + "v2.0/routers", timeout=30) as response:
        routers: list[dict[str, object]] = json.load(response)["routers"]
    return routers


@dataclass
class CliStack:
    """The module's stack: its directory and what ``l3ha lab stack up`` answered."""

    directory: Path
    up: subprocess.CompletedProcess[str]

    def opened(self) -> Stack:
        assert self.up.returncode == 0, self.up.stderr
        return open_stack(self.directory)


@pytest.fixture(scope="module")
def cli_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliStack]:
    """``up`` through the CLI; torn down at the end if the module's ``down`` test did not."""
    directory = tmp_path_factory.mktemp("realstack-cli") / "st"
    sweep(directory)
    try:
        yield CliStack(directory, l3ha("lab", "stack", "up", *UP_ARGS, "--dir", str(directory)))
    finally:
        if leftovers(directory):
            teardown(directory)


@pytest.mark.timeout(600)
def test_up_serves_real_routers_and_a_second_up_is_refused(cli_stack: CliStack) -> None:
    up = cli_stack.up
    assert up.returncode == 0, up.stderr
    assert "auth_type: none" in up.stdout
    endpoint = up.stdout.split("network_endpoint_override:")[1].split()[0]
    assert endpoint.startswith("http://127.0.0.1:")
    assert sorted(str(r["name"]) for r in routers_of(endpoint)) == ROUTERS
    for index in range(1, len(ROUTERS) + 1):
        assert pings(vm_namespace(index), tenant_router_ip(index))
    external = [r["external_gateway_info"] for r in routers_of(endpoint)]
    gateways = [str(g["external_fixed_ips"][0]["ip_address"]) for g in external]  # type: ignore[index]
    assert all(pings(CLIENT_NS, address) for address in gateways)
    print(f"\nbring-up phases (s): {cli_stack.opened().state.data['bring_up']}")

    again = l3ha("lab", "stack", "up", *UP_ARGS, "--dir", str(cli_stack.directory))
    assert again.returncode == 2
    assert again.stderr.count("\n") == 1 and "already up" in again.stderr


def ha_states(stack: Stack, router_id: str) -> dict[str, str]:
    agents = stack.api.get(f"routers/{router_id}/l3-agents")["agents"]
    return {str(a["host"]): str(a["ha_state"]) for a in agents}


def audit(stack: Stack) -> list[dict[str, object]]:
    env = {**os.environ, "OS_CLIENT_CONFIG_FILE": str(stack.layout.root / "clouds.yaml")}
    argv = [str(Path(sys.executable).parent / "l3ha"), "ha", "audit", "--os-cloud",
            "l3ha-stack", "-f", "json"]  # fmt: skip
    result = subprocess.run(argv, capture_output=True, text=True, env=env, check=False, timeout=120)
    assert result.returncode in (0, 1, 2), result.stderr
    findings: list[dict[str, object]] = json.loads(result.stdout or "[]")
    return findings


def dhcp_evacuate(stack: Stack, host: str, tmp_path: Path, with_dhcp: set[str]) -> set[str]:
    """``l3ha dhcp evacuate HOST`` once Neutron sees its DHCP agent dead; the networks moved.

    Neutron also schedules networks without a DHCP subnet (the external and HA networks)
    onto DHCP agents; no agent gets a DHCP port for them, so l3ha only removes them from
    the dead agent (it once moved them and waited out --port-timeout for a port, exit 1).
    """

    def agent_dead() -> bool:
        return not any(a["alive"] for a in stack.api.agents("DHCP agent") if a["host"] == host)

    wait_for(f"Neutron to see {host}'s DHCP agent dead", agent_dead, 60, 1)
    argv = [str(Path(sys.executable).parent / "l3ha"), "dhcp", "evacuate", host, "--os-cloud",
            CLOUD_NAME, "--port-timeout", "40", "--state-dir", str(tmp_path / "dhcp-state"),
            "-f", "json"]  # fmt: skip
    env = {**os.environ, "OS_CLIENT_CONFIG_FILE": str(stack.layout.root / "clouds.yaml")}
    result = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300,
                            check=False)  # fmt: skip
    summary = json.loads(result.stdout)
    moves = [m for run in summary["runs"] for m in run["moves"]]
    assert result.returncode == 0, summary
    assert {m["outcome"] for m in moves} <= {"moved", "removed"}, summary
    removed = {str(m["network"]) for m in moves if m["outcome"] == "removed"}
    assert not removed & with_dhcp, summary
    assert networks_on(stack.api, host) == [], summary
    return {str(m["network"]) for m in moves if m["outcome"] == "moved"}


def every_vm_offered(networks: dict[int, str]) -> bool:
    """Each VM's DHCPDISCOVER gets its own address offered."""
    for index in networks:
        offer = dhcp_offer(index)
        if offer is None or offer.address != vm_ip(index):
            return False
    return True


def check_dhcp_served(stack: Stack, networks: dict[int, str]) -> None:
    """Every tenant network on live agents with ACTIVE DHCP ports; each VM answered by one."""
    answers = {index: dhcp_offer(index) for index in networks}
    for index, network_id in networks.items():
        agents = dhcp_agents(stack.api, network_id)
        assert agents and all(agents.values()), (index, agents)
        assert all(dhcp_port_active_on(stack.api, network_id, h) for h in agents), (index, agents)
        offer = answers[index]
        assert offer is not None and offer.address == vm_ip(index), (index, offer)
        assert dhcp_server_host(stack.api, network_id, offer.server) in agents, (index, offer)


@pytest.mark.timeout(400)
def test_node_death_vrrp_fails_over_l3ha_restores_the_replica_and_moves_its_dhcp(
    cli_stack: CliStack, tmp_path: Path
) -> None:
    stack = cli_stack.opened()
    name, router_id = next(
        (n, rid) for n, rid in sorted(stack.state.data["routers"].items())
        if stack.spec.is_ha(int(n[1:]))
    )  # fmt: skip
    vip = tenant_router_ip(int(name[1:]))
    networks = tenant_networks(stack.api, stack.spec)
    with_dhcp = set(networks.values())
    wait_for("one active replica", lambda: "active" in ha_states(stack, router_id).values(), 60)
    wait_for("every VM to get a DHCP offer", lambda: every_vm_offered(networks), 60, 1)
    victim = next(h for h, s in ha_states(stack, router_id).items() if s == "active")
    served = set(networks_on(stack.api, victim)) & with_dhcp
    assert vip_holders(stack, router_id, vip) == [victim]
    assert served, f"{victim} serves no tenant network"
    pingers = Pingers(stack.spec, tmp_path / "ping").start()
    watch = Watch(stack, tmp_path)
    try:
        time.sleep(3)
        killed = time.time()
        stack.kill_node(victim)

        def restored() -> bool:
            states = ha_states(stack, router_id)
            return victim not in states and sorted(states.values()) == ["active", "standby"]

        wait_for("l3ha to replace the dead replica", restored, 150, 1)
        restored_after = time.time() - killed
        moved = dhcp_evacuate(stack, victim, tmp_path, with_dhcp)
        evacuated = time.time() - killed
        wait_for("every VM to get a DHCP offer again", lambda: every_vm_offered(networks), 60, 1)
        offered = time.time() - killed
    finally:
        log = watch.stop()
        reach = pingers.stop()
    dark = reach[name]
    print(f"\nHA node death ({victim}): {name} dark {dark.dark_seconds:.1f} s (VRRP), "
          f"redundancy restored {restored_after:.1f} s after the kill; DHCP: {len(served)} "
          f"network(s) evacuated {evacuated:.1f} s after it, every VM offered an address "
          f"{offered:.1f} s after")  # fmt: skip
    assert dark.longest < 15.0, dark
    active = [h for h, s in ha_states(stack, router_id).items() if s == "active"]
    wait_for("the VIP on the active replica",
             lambda: vip_holders(stack, router_id, vip) == active, 30)  # fmt: skip
    findings = [f for f in audit(stack) if f.get("router") in (router_id, name)]
    assert findings == [], (findings, log[-2000:])
    assert moved & with_dhcp == served
    check_dhcp_served(stack, networks)


@pytest.mark.timeout(300)
def test_down_removes_everything(cli_stack: CliStack) -> None:
    down = l3ha("lab", "stack", "down", "--dir", str(cli_stack.directory))
    assert down.returncode == 0, down.stderr
    assert leftovers(cli_stack.directory) == []


def test_bad_input_is_one_line_and_changes_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "st"
    for args in (["--nodes", "0", "--routers", "1"], ["--nodes", "2", "--routers", "1",
                                                        "--ha-routers", "2"]):  # fmt: skip
        result = l3ha("lab", "stack", "up", *args, "--dir", str(directory))
        assert result.returncode == 2
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert not directory.exists()
    fault = l3ha("lab", "stack", "fault", "kill-node", "n1", "--dir", str(directory))
    assert fault.returncode == 2 and "no stack is up" in fault.stderr


def test_spec_rejects_agent_down_time_below_two_reports() -> None:
    from l3ha.errors import BadInputError

    with pytest.raises(BadInputError, match="twice"):
        StackSpec(nodes=2, routers=1, report_interval=10, agent_down_time=15)


@pytest.mark.timeout(300)
def test_a_failed_bring_up_tears_down_what_it_made(tmp_path: Path) -> None:
    """Neutron's migrations fail (a stand-in interpreter): MariaDB and RabbitMQ, already
    running by then, are stopped again and nothing is left but the kept logs."""
    real = Path(os.environ["L3HA_NEUTRON_PYTHON"])
    fake = tmp_path / "venv"
    (fake / "bin").mkdir(parents=True)
    (fake / "etc" / "neutron").mkdir(parents=True)
    (fake / "etc" / "neutron" / "api-paste.ini").write_text("")
    (fake / "bin" / "neutron-db-manage").write_text("")
    python = fake / "bin" / "python"
    python.write_text(f'#!/bin/sh\n[ "$1" = "-c" ] && exec {real} "$@"\nexit 3\n')
    python.chmod(0o755)
    directory = tmp_path / "st"
    sweep(directory)
    env = {**os.environ, "L3HA_NEUTRON_PYTHON": str(python)}
    argv = [str(Path(sys.executable).parent / "l3ha"), "lab", "stack", "up", "--nodes", "1",
            "--routers", "0", "--dir", str(directory)]  # fmt: skip
    result = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=280, check=False)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "neutron-db-manage" in result.stderr
    assert leftovers(directory) == []
    assert (tmp_path / "st.failed" / "log" / "mariadb.out").exists()
