"""``openstack l3ha ...``: the real ``openstack`` command with l3ha's plugin against the
emulator (real time, on loopback); its output equals ``l3ha``'s and its actions change
the emulated cloud as ``l3ha``'s do."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from l3ha.emulator import Emulator
from l3ha.emulator.testing import FAST, Clocking, emulated_cloud

from .conftest import CLOUD, Commands

pytestmark = pytest.mark.slow


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    """3 agents, 9 routers (1 busy), on the real clock: agents die and routers move."""
    with emulated_cloud(Clocking.REAL, agents=3, routers=9, busy=1, seed=3, **FAST) as cloud:
        assert cloud.emulator is not None
        yield cloud.emulator


def routers_by_host(emulator: Emulator) -> dict[str, int]:
    return {agent["host"]: agent["routers"] for agent in emulator.state()["agents"]}


def agent_state(emulator: Emulator, host: str) -> dict[str, Any]:
    (agent,) = [a for a in emulator.state()["agents"] if a["host"] == host]
    return agent


def without_age(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows less what changes with every heartbeat (the agents report every 0.2 s)."""
    return [
        {k: v for k, v in row.items() if k not in ("heartbeat", "heartbeat_age")} for row in rows
    ]


def test_openstack_lists_the_l3ha_commands(commands: Commands) -> None:
    done = commands.openstack("command", "list", "--group", "openstack.l3ha.v1", "-f", "json")
    assert done.returncode == 0, done.stderr
    (group,) = json.loads(done.stdout)
    listed = set(group["Commands"])
    assert {"l3ha agent list", "l3ha router show", "l3ha evacuate", "l3ha drain"} <= listed
    assert {"l3ha undrain", "l3ha rebalance", "l3ha check"} <= listed


def test_lists_and_shows_print_what_l3ha_prints(commands: Commands, emulator: Emulator) -> None:
    for argv in (("agent", "list", "--long"), ("router", "list"), ("agent", "show", "net-2")):
        via_openstack = commands.openstack("l3ha", *argv, "-f", "json")
        via_l3ha = commands.l3ha(*argv, "-f", "json")
        assert via_openstack.returncode == via_l3ha.returncode == 0, via_openstack.stderr
        plugin, own = json.loads(via_openstack.stdout), json.loads(via_l3ha.stdout)
        if isinstance(own, list):
            assert without_age(plugin) == without_age(own)
        else:
            assert without_age([plugin]) == without_age([own])
    hosts = [row["host"] for row in commands.openstack_json("l3ha", "agent", "list")]
    assert hosts == ["net-1", "net-2", "net-3"]


def test_table_sort_and_columns_options_apply(commands: Commands) -> None:
    argv = ("l3ha", "router", "list", "-f", "value", "-c", "name", "--sort-column", "Name")
    done = commands.openstack(*argv, "--sort-descending")
    assert done.returncode == 0, done.stderr
    names = done.stdout.split()
    assert names == sorted(names, reverse=True) and len(names) == 9
    table = commands.openstack("l3ha", "agent", "show", "net-1", "-c", "host")
    assert table.returncode == 0 and "| Host  | net-1 |" in table.stdout, table.stdout


def test_evacuate_moves_every_router_off_a_dead_agent(
    commands: Commands, emulator: Emulator
) -> None:
    emulator.faults.kill_agent("net-3")
    deadline = time.monotonic() + 20
    while agent_state(emulator, "net-3")["alive"] and time.monotonic() < deadline:
        time.sleep(0.1)
    before = routers_by_host(emulator)
    assert before["net-3"] > 0
    done = commands.openstack("l3ha", "evacuate", "net-3", "--port-timeout", "20", "-f", "json")
    assert done.returncode == 0, done.stderr
    moves = json.loads(done.stdout)["moves"]
    assert len(moves) == before["net-3"] and {m["outcome"] for m in moves} == {"moved"}
    after = routers_by_host(emulator)
    assert after["net-3"] == 0 and sum(after.values()) == sum(before.values())


def test_drain_undrain_and_check(commands: Commands, emulator: Emulator) -> None:
    done = commands.openstack("l3ha", "drain", "net-1", "--port-timeout", "20")
    assert done.returncode == 0, done.stderr
    assert routers_by_host(emulator)["net-1"] == 0
    assert agent_state(emulator, "net-1")["admin_state_up"] is False
    check = commands.openstack("l3ha", "check")
    assert check.stdout.startswith("L3HA ") and check.stdout.count("\n") == 1, check.stdout
    done = commands.openstack("l3ha", "undrain", "net-1")
    assert done.returncode == 0, done.stderr
    assert agent_state(emulator, "net-1")["admin_state_up"] is True
    done = commands.openstack("l3ha", "rebalance", "--port-timeout", "20")
    assert done.returncode == 0, done.stderr
    assert routers_by_host(emulator)["net-1"] > 0


def test_an_l3ha_error_is_one_line_with_l3ha_exit_code(
    commands: Commands, emulator: Emulator
) -> None:
    before = routers_by_host(emulator)
    done = commands.openstack("l3ha", "evacuate", "net-99")
    assert done.returncode == 2
    assert done.stderr.startswith("openstack l3ha: error: ") and done.stderr.count("\n") == 1
    live = commands.openstack("l3ha", "evacuate", "net-2")  # a live agent: refused
    assert live.returncode == 3, live.stderr
    assert routers_by_host(emulator) == before


def test_the_openstack_clients_own_auth_options_apply(tmp_path: Path) -> None:
    """No clouds.yaml: ``openstack --os-auth-url ... --os-password ... l3ha agent list``
    authenticates with the emulator's Keystone; a wrong password gets no list."""
    with emulated_cloud(Clocking.REAL, agents=2, routers=2, keystone=True) as cloud:
        assert cloud.emulator is not None
        emu = cloud.emulator
        commands = Commands(tmp_path / "none.yaml", CLOUD, tmp_path / "state")
        auth = emu.clouds_entry()["auth"]
        options = [
            "--os-auth-url", auth["auth_url"], "--os-username", auth["username"],
            "--os-project-name", auth["project_name"], "--os-user-domain-name", "Default",
            "--os-project-domain-name", "Default", "--os-region-name", "RegionOne",
        ]  # fmt: skip
        base = [commands.openstack_path, *options]
        ok = commands.run([*base, "--os-password", auth["password"], "l3ha", "agent", "list"])
        assert ok.returncode == 0, ok.stderr
        assert "| net-1 |" in ok.stdout and "| net-2 |" in ok.stdout
        refused = commands.run([*base, "--os-password", "wrong", "l3ha", "agent", "list"])
        assert refused.returncode != 0 and "net-1" not in refused.stdout
