"""Running the real ``openstack`` command (python-openstackclient, with l3ha's plugin
installed through its entry points) and the real ``l3ha`` command as subprocesses,
configured only by a temporary clouds.yaml and journal directory (``commands``: against
the emulator a test module provides as its ``emulator`` fixture)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

CLI_TIMEOUT_S = 120
#: The emulator's name in the clouds.yaml of the ``commands`` fixture.
CLOUD = "l3ha-emulator"


class Commands:
    """``openstack --os-cloud CLOUD ...`` and ``l3ha ... --os-cloud CLOUD`` side by side."""

    def __init__(self, clouds_yaml: Path, cloud: str, state_dir: Path) -> None:
        bin_dir = Path(sys.executable).parent
        openstack = shutil.which("openstack", path=str(bin_dir))
        if openstack is None:
            pytest.skip(
                "the openstack CLI is not installed next to this Python (pip install .[dev])"
            )
        self.openstack_path = openstack
        self.l3ha_path = str(bin_dir / "l3ha")
        self.cloud = cloud
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        self.env["OS_CLIENT_CONFIG_FILE"] = str(clouds_yaml)
        self.env["L3HA_STATE_DIR"] = str(state_dir)

    def run(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv, env=self.env, capture_output=True, text=True, timeout=CLI_TIMEOUT_S, check=False
        )

    def openstack(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run([self.openstack_path, "--os-cloud", self.cloud, *args])

    def l3ha(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run([self.l3ha_path, *args, "--os-cloud", self.cloud])

    def openstack_json(self, *args: str) -> Any:
        done = self.openstack(*args, "-f", "json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


@pytest.fixture
def commands(emulator: Any, tmp_path: Path) -> Commands:
    """The commands against the test module's ``emulator`` fixture."""
    clouds = emulator.write_clouds_yaml(tmp_path / "clouds.yaml", name=CLOUD)
    return Commands(clouds, CLOUD, tmp_path / "state")
