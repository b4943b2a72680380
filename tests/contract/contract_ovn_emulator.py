"""The emulator's ML2/OVN mode as a contract backend; serves HTTP on loopback from this process.

Runs on a ManualClock with ``ovn=True`` and enough gateway chassis (``gw-1``..) to hand
one out per request, so every test owns the chassis it changes; routers get their
gateway on the emulator's external network.
"""

from __future__ import annotations

import contextlib
from typing import Any

from tests.contract.contract_http import Api

CHASSIS = 80


class OvnEmulatorBackend:
    """The contract suite's OVN view of an in-process emulator."""

    name = "emulator"

    def __init__(self, emulator: Any, running: contextlib.ExitStack) -> None:
        self.emulator = emulator
        self._running = running
        self.url: str = emulator.url
        self.api = Api(self.url)
        self._unused = [f"gw-{n}" for n in range(1, CHASSIS + 1)]
        self._count = 0

    @classmethod
    def start(cls) -> OvnEmulatorBackend:
        from l3ha.emulator.testing import FAST, Clocking, emulated_cloud

        running = contextlib.ExitStack()
        cloud = running.enter_context(
            emulated_cloud(Clocking.MANUAL, ovn=True, ovn_chassis=CHASSIS, routers=1, **FAST)
        )
        assert cloud.emulator is not None
        return cls(cloud.emulator, running)

    def stop(self) -> None:
        self._running.close()

    def new_chassis(self) -> str:
        """A gateway chassis no other test has used."""
        if not self._unused:
            raise AssertionError("the emulator has no unused gateway chassis left")
        return self._unused.pop(0)

    def heartbeat_all(self) -> None:
        """Let the chassis acknowledge a ping or two (simulated time)."""
        self.emulator.advance(0.5)

    def kill_chassis(self, name: str) -> None:
        """The chassis crashes; two agent listings a ping interval apart let Neutron's rule
        see it (its answer two configurations behind and older than agent_down_time)."""
        self.emulator.faults.kill_chassis(name)
        for _ in range(2):
            self.api.get("/v2.0/agents")
            self.emulator.advance(1.1)

    def revive_chassis(self, name: str) -> None:
        self.emulator.faults.revive_chassis(name)

    def gateway_router(self) -> str:
        """A router with an external gateway on the external network."""
        self._count += 1
        networks = self.api.get("/v2.0/networks?router:external=True").json()["networks"]
        gateway = {"network_id": networks[0]["id"]}
        body = {"router": {"name": f"contract-ovn-{self._count}", "external_gateway_info": gateway}}
        reply = self.api.post("/v2.0/routers", body)
        if reply.status != 201:
            raise AssertionError(f"gateway router: {reply.status} {reply.text}")
        return str(reply.json()["router"]["id"])
