"""A real Neutron ML2/OVN API server and real OVN central for the contract suite; spawns processes.

Brings up, in one scratch directory: the OVN northbound and southbound ovsdb-servers
(unix sockets) and ovn-northd from Debian's ovn-central, a private MariaDB (the OVN
driver writes from background threads: SQLite locks), the Neutron schema, and the
Neutron API (``l3ha.lab.stack.neutron_api``, wsgiref, ``ASGI_WORKERS=1``, ``TMPDIR``)
with ``mechanism_drivers = ovn`` and ``service_plugins = ovn-router``. Gateway chassis
are southbound Chassis/Chassis_Private rows the backend writes itself with
``other_config:ovn-cms-options=enable-chassis-as-gw``; a chassis is alive for Neutron
while its Chassis_Private.nb_cfg keeps up with NB_Global.nb_cfg (the backend answers
for it) or its nb_cfg_timestamp is younger than agent_down_time.
"""

from __future__ import annotations

import time
from pathlib import Path

from tests.contract.contract_http import Api, call

from l3ha.lab.stack.configs import StackLayout
from l3ha.lab.stack.ovncentral import OVN_PHYSNET, OvnCentral, start_ovn_neutron
from l3ha.lab.stack.processes import StateFile, stop_groups, wait_for
from l3ha.lab.stack.services import check_pymysql

PHYSNET = OVN_PHYSNET
AGENT_DOWN_TIME_S = 30


class OvnNeutronServer:
    """OVN central, MariaDB and the ML2/OVN Neutron API under one scratch directory."""

    def __init__(self, python: Path, root: Path) -> None:
        self.python = python
        self.layout = StackLayout(root)
        self.state = StateFile(root / "stack.json")
        self.ovn = OvnCentral(root / "ovn", self.state)
        self.url = ""
        self.startup_s = 0.0

    def start(self) -> None:
        began = time.monotonic()
        check_pymysql(self.python)  # one clear line before anything is started
        self.ovn.logs.mkdir(parents=True, exist_ok=True)
        self.ovn.start()
        api = start_ovn_neutron(
            self.python,
            self.layout,
            self.state,
            self.ovn,
            host="contract-ovn-server",
            agent_down_time=AGENT_DOWN_TIME_S,
        )
        self.url = f"http://127.0.0.1:{api}/"
        wait_for("GET /", lambda: call(self.url).status == 200, 60)
        self.startup_s = time.monotonic() - began

    def stop(self) -> None:
        self.ovn.stop()
        stop_groups(list(self.state.pids.values()), grace=10)


class OvnNeutronBackend:
    """The contract suite's OVN view of the real server: chassis as southbound rows."""

    name = "neutron"

    def __init__(self, server: OvnNeutronServer) -> None:
        self.server = server
        self.ovn = server.ovn
        self.url = server.url
        self.api = Api(server.url)
        self._count = 0
        self.chassis: list[str] = []
        self._pool: list[str] = []
        self._external = ""

    def add_pool(self, count: int) -> None:
        """Create ``count`` gateway chassis before any test runs: a chassis that becomes a
        gateway makes Neutron reschedule every router's gateway (it refills emptied groups),
        so none may appear while tests hold routers."""
        self._pool = [self._create_chassis() for _ in range(count)]

    def new_chassis(self) -> str:
        """A gateway chassis of the pool no other test has used."""
        if not self._pool:
            raise AssertionError("no unused gateway chassis left in the pool")
        return self._pool.pop(0)

    def _create_chassis(self) -> str:
        """A fresh gateway chassis, alive (it has answered the current nb_cfg just now)."""
        name = f"gw-{len(self.chassis) + 1}"
        self.ovn.sbctl("chassis-add", name, "geneve", f"127.0.1.{len(self.chassis) + 1}")
        self.chassis.append(name)
        self.ovn.sbctl(
            "set", "Chassis", name, f"hostname={name}",
            "other_config:ovn-cms-options=enable-chassis-as-gw",
            f"other_config:ovn-bridge-mappings={PHYSNET}:br-ex",
        )  # fmt: skip
        self.heartbeat(name)
        wait_for(f"agent {name}", lambda: self.api.get(f"/v2.0/agents/{name}").status == 200, 30)
        return name

    def heartbeat_all(self) -> None:
        """Every chassis of the backend acknowledges the current nb_cfg now."""
        for name in self.chassis:
            self.heartbeat(name)

    def kill_chassis(self, name: str) -> None:
        """The chassis stops answering: its acknowledgement is two configurations behind
        NB_Global.nb_cfg and an hour old (an nb_cfg change, so Neutron's agent cache sees it)."""
        nb_cfg = int(self.ovn.nbctl("get", "NB_Global", ".", "nb_cfg").strip())
        stamp = int((time.time() - 3600) * 1000)
        self.ovn.sbctl("set", "Chassis_Private", self._private(name), f"nb_cfg={nb_cfg - 2}",
                       f"nb_cfg_timestamp={stamp}")  # fmt: skip

    def revive_chassis(self, name: str) -> None:
        """The chassis answers again (ovn-controller acknowledges on connecting)."""
        self.heartbeat(name)

    def heartbeat(self, name: str) -> None:
        """What ovn-controller does: acknowledge NB_Global.nb_cfg, with the time it did."""
        nb_cfg = self.ovn.nbctl("get", "NB_Global", ".", "nb_cfg").strip()
        stamp = int(time.time() * 1000)
        record = self._private(name)
        self.ovn.sbctl("set", "Chassis_Private", record, f"nb_cfg={nb_cfg}",
                       f"nb_cfg_timestamp={stamp}")  # fmt: skip

    def _private(self, name: str) -> str:
        found = self.ovn.sbctl(
            "--bare", "--columns=_uuid", "find", "Chassis_Private", f"name={name}"
        )
        if found.strip():
            return found.strip()
        chassis = self.ovn.sbctl("--bare", "--columns=_uuid", "find", "Chassis", f"name={name}")
        return self.ovn.sbctl(
            "create", "Chassis_Private", f"name={name}", f"chassis={chassis.strip()}"
        ).strip()

    def gateway_router(self) -> str:
        """A router with an external gateway on a flat network of the bridge mappings."""
        self._count += 1
        gateway = {"network_id": self._external_network()}
        body = {"router": {"name": f"contract-ovn-{self._count}", "external_gateway_info": gateway}}
        reply = self.api.post("/v2.0/routers", body)
        if reply.status != 201:
            raise AssertionError(f"gateway router: {reply.status} {reply.text}")
        return str(reply.json()["router"]["id"])

    def _external_network(self) -> str:
        if self._external:
            return self._external
        network = {
            "name": "contract-ovn-ext",
            "provider:network_type": "flat",
            "provider:physical_network": PHYSNET,
            "router:external": True,
        }
        reply = self.api.post("/v2.0/networks", {"network": network})
        if reply.status != 201:
            raise AssertionError(f"external network: {reply.status} {reply.text}")
        self._external = str(reply.json()["network"]["id"])
        subnet = {"network_id": self._external, "cidr": "172.30.0.0/16", "ip_version": 4}
        reply = self.api.post("/v2.0/subnets", {"subnet": subnet})
        if reply.status != 201:
            raise AssertionError(f"external subnet: {reply.status} {reply.text}")
        return self._external
