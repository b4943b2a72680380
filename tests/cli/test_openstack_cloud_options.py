"""The ``openstack`` client's cloud options on ``l3ha`` (registered by openstacksdk's argparse
support): the real ``l3ha`` command against the emulator with Keystone, configured by options
alone (no clouds.yaml, no ``OS_*`` variables), and bad values as one line with exit 2."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from l3ha.emulator import Emulator
from l3ha.emulator.testing import SMALL, Clocking, emulated_cloud

L3HA = str(Path(sys.executable).parent / "l3ha")


@pytest.fixture(scope="module")
def keystone_emulator() -> Iterator[Emulator]:
    with emulated_cloud(Clocking.MANUAL, keystone=True, **SMALL) as cloud:
        assert cloud.emulator is not None
        yield cloud.emulator


def l3ha(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env["OS_CLIENT_CONFIG_FILE"] = str(tmp_path / "none.yaml")  # no clouds.yaml at all
    return subprocess.run(
        [L3HA, *argv], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def credentials(emu: Emulator) -> list[str]:
    return [
        "--os-auth-url", emu.clouds_entry()["auth"]["auth_url"],
        "--os-username", emu.cfg.username,
        "--os-password", emu.cfg.password,
        "--os-project-name", emu.cfg.project_name,
        "--os-user-domain-name", "Default",
        "--os-project-domain-name", "Default",
    ]  # fmt: skip


def test_the_openstack_options_alone_reach_the_cloud(
    keystone_emulator: Emulator, tmp_path: Path
) -> None:
    options = [*credentials(keystone_emulator), "--os-region-name", "RegionOne"]
    done = l3ha(tmp_path, "agent", "list", "-f", "json", *options, "--os-interface", "public")
    assert done.returncode == 0, done.stderr
    hosts = [row["host"] for row in json.loads(done.stdout)]
    assert hosts == ["net-1", "net-2", "net-3", "net-4"]
    done = l3ha(tmp_path, "router", "show", "-f", "value", "-c", "name", "router-0001", *options)
    assert (done.returncode, done.stdout) == (0, "router-0001\n"), done.stderr


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--os-region-name", "Atlantis"], "network service in Atlantis region not found"),
        (["--os-interface", "sideways"], "sideways endpoint for network service not found"),
        (["--os-password", "wrong"], "the credentials were rejected"),
        (["--timeout", "soon"], "argument --timeout: soon must be a float"),
        (["--os-auth-type", "telepathy"], "The plugin telepathy could not be found"),
    ],
)
def test_a_bad_value_is_one_line_and_exit_2(
    keystone_emulator: Emulator, tmp_path: Path, extra: list[str], message: str
) -> None:
    done = l3ha(tmp_path, "agent", "list", *credentials(keystone_emulator), *extra)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_timeout_wins_over_api_timeout(tmp_path: Path) -> None:
    """A Neutron endpoint that accepts connections and never answers: ``--timeout 0.5``
    bounds the connect check (two timeouts) although ``--api-timeout`` says 30."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/"
        clouds = tmp_path / "clouds.yaml"
        clouds.write_text(
            f"clouds:\n  silent:\n    auth_type: none\n    network_endpoint_override: {url}\n"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        env["OS_CLIENT_CONFIG_FILE"] = str(clouds)
        argv = ["agent", "list", "--os-cloud", "silent", "--api-timeout", "30", "--timeout", "0.5"]
        done = subprocess.run(
            [L3HA, *argv], env=env, capture_output=True, text=True, timeout=60, check=False
        )
    assert done.returncode == 1
    assert "no answer within 1 s" in done.stderr and done.stderr.count("\n") == 1, done.stderr
