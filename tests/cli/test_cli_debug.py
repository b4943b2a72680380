"""``-v`` / ``--debug`` log every Neutron API request (method, path, status, milliseconds), as
``openstack --debug`` does, and never a token or password."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from l3ha.emulator import Emulator, EmulatorConfig

L3HA = [sys.executable, "-c", "from l3ha.cli.main import run; run()"]
REQUEST = re.compile(
    r" DEBUG l3ha\.api: (GET|PUT|POST|DELETE) (.+?) -> (\d{3}|ok|failed: .*) \((\d+) ms\)$"
)
SECRET = "s3cret-l3ha-test-password"


def _run(argv: list[str], clouds: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.update(OS_CLIENT_CONFIG_FILE=str(clouds), OS_CLOUD="l3ha-emulator",
               L3HA_STATE_DIR=str(tmp_path / "state"))  # fmt: skip
    return subprocess.run([*L3HA, *argv], env=env, capture_output=True, text=True, timeout=120,
                          check=False)  # fmt: skip


@pytest.mark.parametrize("flag", ["-v", "--debug"])
def test_every_api_request_is_logged_without_secrets(tmp_path: Path, flag: str) -> None:
    config = EmulatorConfig(agents=3, routers=6, keystone=True, password=SECRET, seed=4)
    with Emulator(config) as emu:
        clouds = emu.write_clouds_yaml(tmp_path / "clouds.yaml")
        assert SECRET in clouds.read_text(encoding="utf-8")
        done = _run([flag, "agent", "list"], clouds, tmp_path)
        assert done.returncode == 0, done.stderr
        requests = [m for m in map(REQUEST.search, done.stderr.splitlines()) if m]
        paths = [m.group(2) for m in requests]
        assert "/agents?agent_type=L3+agent" in paths and "/routers" in paths
        assert sum(p.endswith("/l3-routers") for p in paths) == 3  # one per agent
        assert {m.group(3) for m in requests} == {"200", "ok"}  # "ok": the connect check
        assert SECRET not in done.stderr and "X-Auth-Token" not in done.stderr
        quiet = _run(["agent", "list"], clouds, tmp_path)
        assert "l3ha.api" not in quiet.stderr  # no flag: no request log


def test_a_request_without_an_answer_is_logged_with_its_error(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    clouds = tmp_path / "clouds.yaml"
    clouds.write_text(
        "clouds:\n  l3ha-emulator:\n    auth_type: none\n"
        f"    network_endpoint_override: http://127.0.0.1:{port}/v2.0/\n",
        encoding="utf-8",
    )
    done = _run(["-v", "agent", "list"], clouds, tmp_path)
    assert done.returncode != 0
    logged = [m.group(3) for m in map(REQUEST.search, done.stderr.splitlines()) if m]
    assert logged and all(s.startswith("failed: ") for s in logged), done.stderr
    assert "connection refused" in logged[0]
