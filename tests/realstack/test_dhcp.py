"""DHCP on the real stack: a node serving DHCP dies, l3ha moves its networks, VMs get answers.

A stack of its own (2 nodes, 2 routers, a DHCP agent per node, dhcp_agents_per_network
1, DHCP on every tenant network; agent_down_time 15 s, report_interval 5 s). Each VM
has a Neutron port (its MAC and address), so dnsmasq answers its DHCPDISCOVER, sent
by ``l3ha.lab.stack.dhcp_probe`` inside the VM namespace. The node serving the most
networks is killed; ``l3ha dhcp evacuate`` moves them make before break; every network
ends on a live agent with an ACTIVE DHCP port there, and every VM's DHCPDISCOVER is
answered by the dnsmasq on the live node.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.realstack.conftest import bring_up, needs_stack

from l3ha.lab.stack.dhcp import (
    dhcp_agents,
    dhcp_offer,
    dhcp_port_active_on,
    dhcp_server_host,
    networks_on,
    tenant_networks,
)
from l3ha.lab.stack.processes import wait_for
from l3ha.lab.stack.spec import CLOUD_NAME, StackSpec, vm_ip
from l3ha.lab.stack.stack import Stack

pytestmark = needs_stack

SPEC = StackSpec(nodes=2, routers=2, dhcp=True, report_interval=5, agent_down_time=15)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from bring_up(tmp_path_factory.mktemp("realstack-dhcp") / "st", SPEC)


def dhcp_evacuate(stack: Stack, host: str, tmp_path: Path, with_dhcp: set[str]) -> set[str]:
    """``l3ha dhcp evacuate HOST`` once Neutron sees its DHCP agent dead; the networks moved.

    Neutron also schedules networks without a DHCP subnet (the external network) onto
    DHCP agents; no agent gets a DHCP port for them, so l3ha only removes them from the
    dead agent (it once moved them and waited out --port-timeout for a port, exit 1).
    """

    def agent_dead() -> bool:
        return not any(a["alive"] for a in stack.api.agents("DHCP agent") if a["host"] == host)

    wait_for(f"Neutron to see {host}'s DHCP agent dead", agent_dead, 60, 1)
    l3ha = str(Path(sys.executable).parent / "l3ha")
    argv = [l3ha, "dhcp", "evacuate", host, "--os-cloud", CLOUD_NAME, "--port-timeout", "20",
            "--state-dir", str(tmp_path / "state"), "-f", "json"]  # fmt: skip
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


@pytest.mark.timeout(400)
def test_node_death_dhcp_evacuate_moves_networks_and_vms_get_answers(
    stack: Stack, tmp_path: Path
) -> None:
    networks = tenant_networks(stack.api, stack.spec)
    with_dhcp = set(networks.values())

    def served_by(host: str) -> set[str]:
        return set(networks_on(stack.api, host)) & with_dhcp

    wait_for("every VM to get a DHCP offer", lambda: every_vm_offered(networks), 60, 1)
    victim = max(stack.spec.hosts, key=lambda h: (len(served_by(h)), h))
    served = served_by(victim)
    killed = time.monotonic()
    stack.kill_node(victim)
    moved = dhcp_evacuate(stack, victim, tmp_path, with_dhcp)
    evacuated = time.monotonic() - killed
    assert moved & with_dhcp == served
    wait_for("every VM to get a DHCP offer again", lambda: every_vm_offered(networks), 60, 1)
    answered = time.monotonic() - killed
    answers = {index: dhcp_offer(index) for index in networks}
    print(f"\nDHCP node death ({victim}): {len(served)} network(s) evacuated {evacuated:.1f} s "
          f"after the kill, every VM answered {answered:.1f} s after; {answers}")  # fmt: skip
    for index, network_id in networks.items():
        agents = dhcp_agents(stack.api, network_id)
        assert agents and all(agents.values()), (index, agents)
        assert all(dhcp_port_active_on(stack.api, network_id, h) for h in agents), (index, agents)
        offer = answers[index]
        assert offer is not None and offer.address == vm_ip(index), (index, offer)
        assert dhcp_server_host(stack.api, network_id, offer.server) in agents, (index, offer)
