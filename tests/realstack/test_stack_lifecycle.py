"""``l3ha lab stack up/down``: a small real stack comes up, answers, and leaves nothing behind.

Spawns the whole stack (2 nodes, 2 routers) through the CLI, as an operator would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from tests.realstack.conftest import leftovers, needs_stack, sweep

from l3ha.lab.stack.spec import CLIENT_NS, StackSpec, tenant_router_ip, vm_namespace
from l3ha.lab.stack.topology import pings

pytestmark = needs_stack


def l3ha(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "l3ha"), *args],
        capture_output=True, text=True, timeout=timeout, check=False, env=os.environ,
    )  # fmt: skip


def routers_of(endpoint: str) -> list[dict[str, object]]:
    with urllib.request.urlopen(endpoint + "v2.0/routers", timeout=30) as response:
        routers: list[dict[str, object]] = json.load(response)["routers"]
    return routers


@pytest.mark.timeout(600)
def test_up_serves_real_routers_and_down_removes_everything(tmp_path: Path) -> None:
    directory = tmp_path / "st"
    sweep(directory)
    try:
        up = l3ha("lab", "stack", "up", "--nodes", "2", "--routers", "2", "--dir", str(directory))
        assert up.returncode == 0, up.stderr
        assert "auth_type: none" in up.stdout
        endpoint = up.stdout.split("network_endpoint_override:")[1].split()[0]
        assert endpoint.startswith("http://127.0.0.1:")
        assert sorted(str(r["name"]) for r in routers_of(endpoint)) == ["r1", "r2"]
        for index in (1, 2):
            assert pings(vm_namespace(index), tenant_router_ip(index))
        external = [r["external_gateway_info"] for r in routers_of(endpoint)]
        gateways = [str(g["external_fixed_ips"][0]["ip_address"]) for g in external]  # type: ignore[index]
        assert all(pings(CLIENT_NS, address) for address in gateways)

        again = l3ha("lab", "stack", "up", "--nodes", "2", "--routers", "2", "--dir",
                     str(directory))  # fmt: skip
        assert again.returncode == 2
        assert again.stderr.count("\n") == 1 and "already up" in again.stderr
    finally:
        down = l3ha("lab", "stack", "down", "--dir", str(directory))
    assert down.returncode == 0, down.stderr
    assert leftovers(directory) == []


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
