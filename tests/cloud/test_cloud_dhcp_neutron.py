"""l3ha's DHCP boundary and executor against the real Neutron API server (needs
L3HA_NEUTRON_PYTHON); spawns the server, performs HTTP on loopback.

The server registers DHCP agents with neutron's own test helpers. Its ports never turn
ACTIVE (no real agents), so a move there must end *pending* with the source copy kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.contract.contract_dhcp import create_network
from tests.contract.contract_neutron import NeutronBackend, NeutronServer, configured_python

from l3ha.clock import SystemClock
from l3ha.cloud.adapter import connect
from l3ha.cloud.dhcp import NeutronDhcp
from l3ha.dhcp_model import DhcpMove, DhcpMoveKind, DhcpPlan
from l3ha.errors import ConflictError
from l3ha.executor import ExecutorOptions
from l3ha.executor.dhcp import DhcpExecutor, DhcpOutcome
from l3ha.journal import Journal

pytestmark = [pytest.mark.neutron, pytest.mark.slow]


@dataclass
class RealCloud:
    backend: NeutronBackend
    dhcp: NeutronDhcp
    networks: int = 0

    def network(self, *, dhcp_subnet: bool) -> str:
        self.networks += 1
        network_id = create_network(self.backend.api, f"l3ha-{self.networks}", 900 + self.networks)
        if dhcp_subnet:
            body = {
                "subnet": {
                    "network_id": network_id,
                    "cidr": f"10.232.{self.networks}.0/24",
                    "ip_version": 4,
                    "enable_dhcp": True,
                }
            }
            reply = self.backend.api.post("/v2.0/subnets", body)
            assert reply.status == 201, reply.text
        return network_id

    def hosts(self, network_id: str) -> set[str]:
        return {a.id for a in self.dhcp.dhcp_agents_of_network(network_id)}


@pytest.fixture(scope="module")
def real(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RealCloud]:
    python, reason = configured_python()
    if python is None:
        pytest.skip(f"real Neutron server unavailable: {reason}")
    server = NeutronServer(python, tmp_path_factory.mktemp("neutron-dhcp"))
    server.start()
    try:
        clouds = tmp_path_factory.mktemp("clouds") / "clouds.yaml"
        clouds.write_text(
            f"clouds:\n  real:\n    auth_type: none\n    network_endpoint_override: {server.url}\n"
        )
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("OS_CLIENT_CONFIG_FILE", str(clouds))
            cloud = connect("real")
        yield RealCloud(NeutronBackend(server), NeutronDhcp(cloud))
    finally:
        server.stop()


def test_the_snapshot_tells_dhcp_agents_networks_and_other_agents_apart(real: RealCloud) -> None:
    first = real.backend.new_dhcp_agent()
    l3 = real.backend.new_agent()
    with_dhcp = real.network(dhcp_subnet=True)
    without = real.network(dhcp_subnet=False)
    real.dhcp.add_network_to_agent(with_dhcp, first.id)
    snap = real.dhcp.read_dhcp_snapshot()
    assert first.id in snap.agents_by_id and l3.id not in snap.agents_by_id
    assert {o.id: o.agent_type for o in snap.other_agents}[l3.id] == "L3 agent"
    assert snap.networks_by_id[with_dhcp].needs_dhcp
    assert not snap.networks_by_id[without].needs_dhcp
    assert first.id in snap.agents_of_network(with_dhcp)


def test_adds_and_removes_are_read_back_and_repeatable(real: RealCloud) -> None:
    agent = real.backend.new_dhcp_agent()
    network = real.network(dhcp_subnet=True)
    real.dhcp.add_network_to_agent(network, agent.id)
    real.dhcp.add_network_to_agent(network, agent.id)  # 409 NetworkHostedByDHCPAgent: done
    assert agent.id in real.hosts(network)
    real.dhcp.remove_network_from_agent(network, agent.id)
    real.dhcp.remove_network_from_agent(network, agent.id)  # 409 not hosted: done
    assert agent.id not in real.hosts(network)


def test_an_l3_agent_and_a_disabled_dhcp_agent_refuse_a_network(real: RealCloud) -> None:
    l3 = real.backend.new_agent()
    agent = real.backend.new_dhcp_agent()
    network = real.network(dhcp_subnet=True)
    with pytest.raises(ConflictError, match="InvalidDHCPAgent"):
        real.dhcp.add_network_to_agent(network, l3.id)
    real.dhcp.set_dhcp_agent_state(agent.id, False, "l3ha: drained")
    with pytest.raises(ConflictError, match="InvalidDHCPAgent"):
        real.dhcp.add_network_to_agent(network, agent.id)
    real.dhcp.set_dhcp_agent_state(agent.id, True, "")
    real.dhcp.add_network_to_agent(network, agent.id)
    assert agent.id in real.hosts(network)


def test_a_move_whose_port_never_turns_active_keeps_the_source_copy(
    real: RealCloud, tmp_path: Path
) -> None:
    source = real.backend.new_dhcp_agent()
    target = real.backend.new_dhcp_agent()
    network = real.network(dhcp_subnet=True)
    for agent_id in real.hosts(network) - {source.id}:  # whatever Neutron scheduled itself
        real.dhcp.remove_network_from_agent(network, agent_id)
    real.dhcp.add_network_to_agent(network, source.id)
    real.backend.dhcp_setup(source, network)
    plan = DhcpPlan("dhcp-drain", (DhcpMove(network, DhcpMoveKind.MOVE, target.id, source.id),))
    options = ExecutorOptions(port_timeout=1.0, port_poll_interval=0.1)
    executor = DhcpExecutor(real.dhcp, Journal(tmp_path / "state"), SystemClock(), options)
    snap = real.dhcp.read_dhcp_snapshot()
    result = executor.run(plan, snap.agents_by_id)
    (moved,) = result.results
    assert moved.outcome is DhcpOutcome.PENDING
    assert real.hosts(network) == {source.id, target.id}
