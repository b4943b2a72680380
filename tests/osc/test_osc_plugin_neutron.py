"""``openstack l3ha ...`` against the real Neutron API server (needs L3HA_NEUTRON_PYTHON):
the real ``openstack`` command with l3ha's plugin lists the agents neutron's own helpers
registered, evacuates a dead one and drains and undrains a live one. Spawns the server and
the commands; HTTP on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.contract.contract_neutron import NeutronBackend, NeutronServer, configured_python

from .conftest import Commands

pytestmark = [pytest.mark.neutron, pytest.mark.slow]
CLOUD = "real"


@dataclass
class Real:
    backend: NeutronBackend
    commands: Commands


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Real]:
    python, reason = configured_python()
    if python is None:
        pytest.skip(f"real Neutron server unavailable: {reason}")
    server = NeutronServer(python, tmp_path_factory.mktemp("neutron-osc"))
    server.start()
    try:
        scratch = tmp_path_factory.mktemp("osc")
        clouds = scratch / "clouds.yaml"
        clouds.write_text(
            f"clouds:\n  {CLOUD}:\n    auth_type: none\n"
            f"    network_endpoint_override: {server.url}\n"
        )
        yield Real(NeutronBackend(server), Commands(Path(clouds), CLOUD, scratch / "state"))
    finally:
        server.stop()


def test_list_evacuate_drain_and_undrain_through_openstack(real: Real) -> None:
    api = real.backend.api
    dead, first, second = (real.backend.new_agent() for _ in range(3))
    routers = [api.create_router(f"osc-{i}") for i in range(3)]
    for router in routers:
        assert api.bind(dead.id, router).status == 201
    (row,) = real.commands.openstack_json("l3ha", "agent", "list", "--name", dead.host)
    assert (row["id"], row["routers"], row["alive"]) == (dead.id, 3, True)
    shown = real.commands.openstack_json("l3ha", "router", "show", "osc-1")
    assert shown["agents"] == [dead.host]

    real.backend.kill_agent(dead)
    done = real.commands.openstack("l3ha", "evacuate", dead.host, "--no-wait", "-f", "json")
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["moves"]) == 3
    for router in routers:
        assert api.hosting_agent_ids(router) in ({first.id}, {second.id})

    done = real.commands.openstack("l3ha", "drain", first.host, "--no-wait")
    assert done.returncode == 0, done.stderr
    assert api.agent(first.id)["admin_state_up"] is False
    assert all(api.hosting_agent_ids(router) == {second.id} for router in routers)
    done = real.commands.openstack("l3ha", "undrain", first.host)
    assert done.returncode == 0, done.stderr
    assert api.agent(first.id)["admin_state_up"] is True
