"""A southbound database restart on ML2/OVN: what Neutron 29 then does to the HA chassis
groups, on the emulator and on a real Neutron ML2/OVN server of its own (docs/ovn.md)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from tests.contract.contract_neutron import configured_python
from tests.contract.contract_ovn_neutron import OvnNeutronBackend, OvnNeutronServer
from tests.contract.test_contract_ovn import priorities

ROUTERS = 3
SB_DOWN_S = 3.0
# Neutron reconnects with a back-off; seen done 5-15 s after the database returned.
SETTLE_S = 60.0


class RealSb:
    """A fresh real server with 3 gateway chassis and 3 gateway routers."""

    def __init__(self, backend: OvnNeutronBackend) -> None:
        self.backend = backend
        self.api = backend.api
        backend.add_pool(3)
        self.routers = [backend.gateway_router() for _ in range(ROUTERS)]
        backend.heartbeat_all()

    def restart_sb(self) -> None:
        before = self.groups()
        self.backend.ovn.restart_sb(SB_DOWN_S)
        deadline = time.monotonic() + SETTLE_S
        while time.monotonic() < deadline and self.groups() == before:
            time.sleep(1)
        time.sleep(3)  # any later transaction (the ones that fail) lands by now

    def groups(self) -> list[dict[str, int]]:
        return [priorities(self, router) for router in self.routers]


class EmulatedSb:
    """The emulator's OVN mode with 3 gateway chassis and 3 gateway routers."""

    def __init__(self, cloud: Any) -> None:
        self.emulator = cloud.emulator
        from tests.contract.contract_http import Api

        self.api = Api(cloud.url)
        self.routers = list(self.emulator.world.routers)

    def restart_sb(self) -> None:
        self.emulator.faults.sb_outage(SB_DOWN_S)
        self.emulator.advance(SB_DOWN_S + 1)

    def groups(self) -> list[dict[str, int]]:
        return [priorities(self, router) for router in self.routers]


@pytest.fixture(
    scope="module", params=["emulator", pytest.param("neutron", marks=pytest.mark.neutron)]
)
def cloud(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    if request.param == "emulator":
        from l3ha.emulator.testing import FAST, Clocking, emulated_cloud

        with emulated_cloud(Clocking.MANUAL, ovn=True, ovn_chassis=3, routers=ROUTERS, **FAST) as c:
            yield EmulatedSb(c)
        return
    python, reason = configured_python()
    if python is None:
        pytest.skip(f"real Neutron server unavailable: {reason}")
    server = OvnNeutronServer(python, tmp_path_factory.mktemp("ovnsb", numbered=True))
    try:
        server.start()
        yield RealSb(OvnNeutronBackend(server))
    finally:
        server.stop()


def test_after_a_southbound_restart_one_chassis_is_demoted_to_0_everywhere(cloud: Any) -> None:
    before = cloud.groups()
    assert all(sorted(group.values()) == [1, 2, 3] for group in before)
    cloud.restart_sb()
    after = cloud.groups()
    demoted = {name for name in after[0] if all(group[name] == 0 for group in after)}
    assert len(demoted) == 1, after
    for old, new in zip(before, after, strict=True):
        assert {k: v for k, v in new.items() if k not in demoted} == {
            k: v for k, v in old.items() if k not in demoted
        }
