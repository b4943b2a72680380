"""The real ``openstack`` CLI (python-openstackclient) against the emulator.

Runs the emulator in this process on loopback and the CLI as subprocesses configured
only by a temporary clouds.yaml, then checks the CLI's JSON output and the emulator's
own state after ``network agent add/remove router --l3``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.contract.contract_http import Api

CLOUD = "l3ha-emulator"
CLI_TIMEOUT_S = 60


def find_cli() -> str | None:
    return shutil.which("openstack", path=str(Path(sys.executable).parent))


@pytest.fixture(scope="module")
def emulator() -> Iterator[Any]:
    from l3ha.emulator.testing import Clocking, emulated_cloud

    with emulated_cloud(Clocking.MANUAL, agents=3, routers=4) as cloud:
        yield cloud.emulator


class Cli:
    """``openstack --os-cloud l3ha-emulator ...`` with nothing but our clouds.yaml."""

    def __init__(self, executable: str, clouds_yaml: Path) -> None:
        self.executable = executable
        self.env = {key: value for key, value in os.environ.items() if not key.startswith("OS_")}
        self.env["OS_CLIENT_CONFIG_FILE"] = str(clouds_yaml)

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.executable, "--os-cloud", CLOUD, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT_S,
            check=False,
        )

    def json(self, *args: str) -> Any:
        done = self.run(*args, "-f", "json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


@pytest.fixture(scope="module")
def cli(emulator: Any, tmp_path_factory: pytest.TempPathFactory) -> Cli:
    executable = find_cli()
    if executable is None:
        pytest.skip("the openstack CLI is not installed next to this Python (pip install .[dev])")
    clouds = emulator.write_clouds_yaml(tmp_path_factory.mktemp("cli") / "clouds.yaml", CLOUD)
    return Cli(executable, Path(clouds))


def routers_per_host(emulator: Any) -> dict[str, int]:
    return {agent["host"]: agent["routers"] for agent in emulator.state()["agents"]}


def hosting_ids(emulator: Any, router: str) -> list[str]:
    """Read back through the API directly (fast), not through the CLI under test."""
    return sorted(Api(emulator.url).hosting_agent_ids(router))


def legacy_routers(emulator: Any) -> list[str]:
    reply = Api(emulator.url).get("/v2.0/routers?fields=id&fields=ha&sort_key=name&sort_dir=asc")
    return [router["id"] for router in reply.json()["routers"] if not router["ha"]]


def test_agent_list_shows_every_l3_agent(cli: Cli, emulator: Any) -> None:
    rows = cli.json("network", "agent", "list")
    assert {row["Host"]: row["ID"] for row in rows} == emulator.agent_ids_by_host()
    for row in rows:
        assert row["Agent Type"] == "L3 agent"
        assert row["Binary"] == "neutron-l3-agent"
        assert (row["Alive"], row["State"]) == (True, True)


def test_agent_list_for_a_router_long_shows_its_host_and_ha_state(cli: Cli, emulator: Any) -> None:
    router = legacy_routers(emulator)[0]
    rows = cli.json("network", "agent", "list", "--router", router, "--long")
    assert len(rows) == 1
    assert rows[0]["ID"] in emulator.agent_ids_by_host().values()
    assert "HA State" in rows[0]
    assert rows[0]["HA State"] is None
    listed = cli.json("router", "list", "--agent", rows[0]["ID"])
    assert router in {row["ID"] for row in listed}


def test_remove_then_add_moves_a_legacy_router(cli: Cli, emulator: Any) -> None:
    ids = emulator.agent_ids_by_host()
    router = legacy_routers(emulator)[1]
    (source,) = hosting_ids(emulator, router)
    target = next(agent_id for agent_id in ids.values() if agent_id != source)
    hosts = {agent_id: host for host, agent_id in ids.items()}
    before = routers_per_host(emulator)

    removed = cli.run("network", "agent", "remove", "router", "--l3", source, router)
    assert removed.returncode == 0, removed.stderr
    assert hosting_ids(emulator, router) == []
    assert routers_per_host(emulator)[hosts[source]] == before[hosts[source]] - 1

    added = cli.run("network", "agent", "add", "router", "--l3", target, router)
    assert added.returncode == 0, added.stderr
    assert hosting_ids(emulator, router) == [target]
    after = routers_per_host(emulator)
    assert after[hosts[target]] == before[hosts[target]] + 1
    assert router in {row["ID"] for row in cli.json("router", "list", "--agent", target)}


def test_add_router_exits_0_although_the_server_refuses_with_409(cli: Cli, emulator: Any) -> None:
    router = legacy_routers(emulator)[2]
    (hosting,) = hosting_ids(emulator, router)
    other = next(i for i in emulator.agent_ids_by_host().values() if i != hosting)
    before = routers_per_host(emulator)
    done = cli.run("network", "agent", "add", "router", "--l3", other, router)
    assert done.returncode == 0
    assert hosting_ids(emulator, router) == [hosting]
    assert routers_per_host(emulator) == before


def test_remove_of_an_unknown_router_fails_in_the_client(cli: Cli, emulator: Any) -> None:
    agent = next(iter(emulator.agent_ids_by_host().values()))
    done = cli.run(
        "network",
        "agent",
        "remove",
        "router",
        "--l3",
        agent,
        "00000000-0000-0000-0000-000000000000",
    )
    assert done.returncode == 1
    assert "No Router found for 00000000-0000-0000-0000-000000000000" in done.stderr
