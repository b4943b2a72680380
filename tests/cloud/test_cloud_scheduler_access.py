"""An empty agent list: a cloud without L3 or DHCP agents is fine (the access check the
adapter then makes finds the scheduler allowed); a hidden one is an error, checked
against the real Neutron server in tests/permissions."""

from __future__ import annotations

from pathlib import Path

import pytest

from l3ha.clock import ManualClock
from l3ha.cloud.adapter import connect
from l3ha.cloud.dhcp import NeutronDhcp
from l3ha.emulator import Emulator, EmulatorConfig


def test_a_cloud_without_l3_agents_lists_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = EmulatorConfig(agents=0, routers=0)
    with Emulator(config, clock=ManualClock()) as emu:
        path = emu.write_clouds_yaml(tmp_path / "clouds.yaml", name="empty")
        monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(path))
        cloud = connect("empty", timeout=10)
        assert cloud.list_agents() == []
        assert cloud.read_snapshot().agents == ()
        dhcp = NeutronDhcp(cloud)
        assert dhcp.list_dhcp_agents() == []
        assert dhcp.read_dhcp_snapshot().agents == ()
