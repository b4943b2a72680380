"""Fixtures of the contract suite: one ``backend`` over the emulator and a real Neutron server.

Starts processes and servers on loopback: the l3ha emulator in this process, and the
real Neutron API server (``tests/neutron_server/serve.py``) in the Neutron virtualenv.
Each is started once per session; tests that change state create their own routers and
take fresh agents, so tests do not depend on each other's order.

Both backends present the same small interface (see ``Backend``): ``name``, ``url``,
``api`` (raw HTTP), ``new_agent(mode)``, ``kill_agent``, ``kill_agents``,
``revive_agent``, ``set_admin_state``, ``settle_ha`` and ``settle_ha_live`` (replicas
report their VRRP state — all of them, or only those on live agents: neutron through
the agent RPC handler, the emulator by simulated election), ``cut_off`` and
``full_resync`` (an agent's sync: neutron through the same handler — a real server's
agents never sync on their own — the emulator by a management partition ending),
``long_dead`` and ``failover_pass`` (an agent dead beyond the dead limit, and one pass of
neutron's periodic L3 rescheduler: neutron's own, in-process, the emulator's model),
``router_with_usage`` (a router with some interface ports and floating IPs: neutron
through its API, the emulator in its world), ``new_dhcp_agent``, ``dhcp_setup`` (a DHCP
agent sets a network up: neutron through the DHCP agent RPC handler, the emulator by
letting time pass) and ``dhcp_failover_pass``.
``conn`` is an openstacksdk connection built from a temporary clouds.yaml
(``auth_type: none`` + ``network_endpoint_override``).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest
from tests.contract.contract_emulator import EmulatorBackend
from tests.contract.contract_http import Api
from tests.contract.contract_neutron import (
    AgentRef,
    NeutronBackend,
    NeutronServer,
    configured_python,
)

CLOUD_NAME = "contract"


class Backend(Protocol):
    """What every contract test needs from a backend."""

    name: str
    url: str
    api: Api

    def new_agent(self, mode: str = "legacy") -> AgentRef: ...
    def kill_agent(self, agent: AgentRef) -> None: ...
    def revive_agent(self, agent: AgentRef) -> None: ...
    def set_admin_state(self, agent: AgentRef, up: bool) -> None: ...
    def kill_agents(self, agents: list[AgentRef]) -> None: ...
    def settle_ha(self, router_id: str) -> str: ...
    def settle_ha_live(self, router_id: str) -> None: ...
    def cut_off(self, agent: AgentRef) -> None: ...
    def full_resync(self, agent: AgentRef) -> list[str]: ...
    def long_dead(self, agent: AgentRef) -> None: ...
    def failover_pass(self) -> None: ...
    def router_with_usage(self, interfaces: int, floating_ips: int) -> str: ...
    def new_dhcp_agent(self) -> AgentRef: ...
    def dhcp_setup(self, agent: AgentRef, network_id: str) -> None: ...
    def dhcp_failover_pass(self) -> None: ...


@pytest.fixture(scope="session")
def neutron_backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NeutronBackend]:
    python, reason = configured_python()
    if python is None:
        pytest.skip(f"real Neutron server unavailable: {reason}")
    server = NeutronServer(python, tmp_path_factory.mktemp("neutron"))
    try:
        server.start()
        yield NeutronBackend(server)
    finally:
        server.stop()


@pytest.fixture(scope="session")
def emulator_backend() -> Iterator[EmulatorBackend]:
    backend = EmulatorBackend.start()
    try:
        yield backend
    finally:
        backend.stop()


@pytest.fixture(
    scope="session",
    params=["emulator", pytest.param("neutron", marks=pytest.mark.neutron)],
)
def backend(request: pytest.FixtureRequest) -> Backend:
    chosen: Backend = request.getfixturevalue(f"{request.param}_backend")
    return chosen


def write_clouds_yaml(directory: Path, url: str) -> Path:
    path = directory / "clouds.yaml"
    path.write_text(
        f"clouds:\n  {CLOUD_NAME}:\n    auth_type: none\n    network_endpoint_override: {url}\n"
    )
    return path


@pytest.fixture(scope="session")
def conn(backend: Backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """An openstacksdk connection to the backend, configured only by a temporary clouds.yaml."""
    import openstack

    clouds = write_clouds_yaml(tmp_path_factory.mktemp(f"clouds-{backend.name}"), backend.url)
    with pytest.MonkeyPatch.context() as patch:
        for variable in [name for name in os.environ if name.startswith("OS_")]:
            patch.delenv(variable)
        patch.setenv("OS_CLIENT_CONFIG_FILE", str(clouds))
        connection = openstack.connect(cloud=CLOUD_NAME)
    try:
        yield connection
    finally:
        connection.close()


@pytest.fixture
def api(backend: Backend) -> Api:
    return backend.api


_router_numbers = itertools.count(1)


@pytest.fixture
def new_router(api: Api, request: pytest.FixtureRequest) -> Any:
    """Factory: create a router through the API, named after the test."""

    def create(ha: bool = False, distributed: bool = False) -> str:
        name = f"contract-{request.node.originalname}-{next(_router_numbers)}"
        return api.create_router(name, ha=ha, distributed=distributed)

    return create


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """openstacksdk warns about its own future removals on every call; keep the report clean."""
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.filterwarnings("ignore::PendingDeprecationWarning"))


_network_numbers = itertools.count(1)


@pytest.fixture
def new_network(api: Api, request: pytest.FixtureRequest) -> Any:
    """Factory: create a network through the API, named after the test (a flat provider
    network on a physical network of its own: the real server has no tenant network type)."""
    from tests.contract.contract_dhcp import create_network

    def create() -> str:
        number = next(_network_numbers)
        return create_network(api, f"contract-{request.node.originalname}-{number}", number)

    return create


@pytest.fixture
def ha_router(api: Api, backend: Backend, new_router: Any) -> Any:
    """Factory: an HA router hosted by exactly ``replicas`` fresh agents.

    The real server schedules a new HA router onto live agents at once; those
    bindings are removed so the test knows every hosting agent.
    """

    def create(replicas: int) -> tuple[str, list[AgentRef]]:
        router = new_router(ha=True)
        for agent_id in api.hosting_agent_ids(router):
            api.unbind(agent_id, router)
        agents = [backend.new_agent() for _ in range(replicas)]
        for agent in agents:
            reply = api.bind(agent.id, router)
            if reply.status != 201:
                raise AssertionError(f"binding HA router: {reply.status} {reply.text}")
        return router, agents

    return create
