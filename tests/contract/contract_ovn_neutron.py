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
from dataclasses import dataclass, field
from pathlib import Path

from tests.contract.contract_http import Api, call

from l3ha.lab.stack.configs import StackLayout
from l3ha.lab.stack.processes import (
    StateFile,
    free_ports,
    port_open,
    run,
    spawn,
    stop_groups,
    wait_for,
)
from l3ha.lab.stack.services import (
    API_SCRIPT,
    check_pymysql,
    migrate_database,
    start_mariadb,
    write_paste_config,
)
from l3ha.lab.stack.spec import Ports

SCHEMAS = Path("/usr/share/ovn")
PHYSNET = "physnet1"
AGENT_DOWN_TIME_S = 30


def neutron_conf(layout: StackLayout, port: int, nb: Path, sb: Path) -> str:
    return f"""[DEFAULT]
core_plugin = ml2
service_plugins = ovn-router
auth_strategy = noauth
transport_url = fake:/
rpc_workers = 0
rpc_state_report_workers = 0
api_workers = 1
host = contract-ovn-server
state_path = {layout.root / "server"}
api_paste_config = {layout.etc / "api-paste.ini"}
agent_down_time = {AGENT_DOWN_TIME_S}
debug = false
log_dir = {layout.logs}

[quotas]
quota_router = -1
quota_network = -1
quota_subnet = -1
quota_port = -1

[database]
connection = mysql+pymysql://root@127.0.0.1:{port}/neutron

[oslo_concurrency]
lock_path = {layout.root / "lock"}

[ovn]
ovn_nb_connection = unix:{nb}
ovn_sb_connection = unix:{sb}
ovn_l3_scheduler = leastloaded
"""


ML2_CONF = f"""[ml2]
type_drivers = flat,geneve
tenant_network_types = geneve
mechanism_drivers = ovn
extension_drivers = port_security

[ml2_type_flat]
flat_networks = {PHYSNET}

[ml2_type_geneve]
vni_ranges = 1:1000
max_header_size = 38
"""


@dataclass
class OvnCentral:
    """NB and SB ovsdb-servers and ovn-northd under ``root`` (unix sockets only)."""

    root: Path
    pids: list[int] = field(default_factory=list)

    @property
    def nb(self) -> Path:
        return self.root / "nb.sock"

    @property
    def sb(self) -> Path:
        return self.root / "sb.sock"

    def start(self) -> None:
        logs = self.root / "log"
        for name, schema, sock in (("nb", "ovn-nb", self.nb), ("sb", "ovn-sb", self.sb)):
            # pids[0] is the NB server, pids[1] the SB server (restart_sb), pids[2] northd
            db = self.root / f"{name}.db"
            run(["ovsdb-tool", "create", str(db), str(SCHEMAS / f"{schema}.ovsschema")])
            argv = ["ovsdb-server", str(db), f"--remote=punix:{sock}", "--no-chdir"]
            argv += [f"--unixctl={self.root / name}.ctl", f"--log-file={logs / name}.log"]
            self.pids.append(spawn(f"ovsdb-{name}", argv, logs))
            wait_for(f"the OVN {name} database", sock.exists, 30)
        run(["ovn-nbctl", f"--db=unix:{self.nb}", "--no-leader-only", "init"])
        run(["ovn-sbctl", f"--db=unix:{self.sb}", "init"])
        argv = ["ovn-northd", f"--ovnnb-db=unix:{self.nb}", f"--ovnsb-db=unix:{self.sb}"]
        argv += [f"--unixctl={self.root / 'northd.ctl'}", f"--log-file={logs / 'northd.log'}"]
        self.pids.append(spawn("northd", argv, logs))

    def restart_sb(self, down_s: float) -> None:
        """Stop the southbound ovsdb-server for ``down_s`` seconds and start it again on the
        same database and socket."""
        stop_groups([self.pids[1]], grace=5)
        time.sleep(down_s)
        logs = self.root / "log"
        argv = ["ovsdb-server", str(self.root / "sb.db"), f"--remote=punix:{self.sb}"]
        argv += ["--no-chdir", f"--unixctl={self.root / 'sb'}.ctl", f"--log-file={logs}/sb.log"]
        self.pids[1] = spawn("ovsdb-sb", argv, logs)
        wait_for("the OVN sb database", self.sb.exists, 30)

    def nbctl(self, *args: str) -> str:
        return run(["ovn-nbctl", f"--db=unix:{self.nb}", "--no-leader-only", *args])

    def sbctl(self, *args: str) -> str:
        return run(["ovn-sbctl", f"--db=unix:{self.sb}", *args])

    def stop(self) -> None:
        stop_groups(self.pids, grace=5)
        self.pids.clear()


class OvnNeutronServer:
    """OVN central, MariaDB and the ML2/OVN Neutron API under one scratch directory."""

    def __init__(self, python: Path, root: Path) -> None:
        self.python = python
        self.layout = StackLayout(root)
        self.ovn = OvnCentral(root / "ovn")
        self.state = StateFile(root / "stack.json")
        self.url = ""
        self.startup_s = 0.0

    def start(self) -> None:
        began = time.monotonic()
        check_pymysql(self.python)  # one clear line before anything is started
        scratch = self.layout.root / "tmp"
        for directory in (self.layout.etc, self.layout.logs, self.ovn.root, scratch):
            directory.mkdir(parents=True, exist_ok=True)
        (self.layout.root / "lock").mkdir(exist_ok=True)
        self.ovn.start()
        mariadb, api = free_ports(2)
        ports = Ports(mariadb=mariadb, rabbit=0, rabbit_dist=0, epmd=0, api=api)
        start_mariadb(self.layout, self.state, ports)
        conf = neutron_conf(self.layout, mariadb, self.ovn.nb, self.ovn.sb)
        (self.layout.etc / "neutron.conf").write_text(conf)
        (self.layout.etc / "ml2_conf.ini").write_text(ML2_CONF)
        write_paste_config(self.python, self.layout)
        migrate_database(self.python, self.layout)
        env = {"ASGI_WORKERS": "1", "TMPDIR": str(scratch)}
        env["PYTHONWARNINGS"] = "ignore"
        argv = [str(self.python), str(API_SCRIPT), str(self.layout.etc), str(api)]
        self.state.record("api", spawn("api", argv, self.layout.logs, env=env))
        wait_for("the Neutron ML2/OVN API", lambda: port_open(api), 180)
        self.url = f"http://127.0.0.1:{api}/"
        wait_for("GET /", lambda: call(self.url).status == 200, 60)
        self.startup_s = time.monotonic() - began

    def stop(self) -> None:
        stop_groups(list(self.state.pids.values()), grace=10)
        self.ovn.stop()


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
