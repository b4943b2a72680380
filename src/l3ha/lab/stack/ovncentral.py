"""OVN central and the ML2/OVN Neutron server's configuration. I/O: spawns ovsdb-server, northd.

``OvnCentral`` runs the northbound and southbound ovsdb-servers (unix sockets)
and ovn-northd from Debian's ovn-central, with private files under one
directory, each recorded in a state file (roles ``ovn/nb``, ``ovn/sb``,
``ovn/northd``). ``ovn_neutron_conf`` and ``OVN_ML2_CONF`` are what Neutron 29
needs for ``mechanism_drivers = ovn`` and ``service_plugins = ovn-router``: no
RabbitMQ (``transport_url = fake:/``), no agents, MariaDB (the OVN driver writes
from background threads: SQLite locks).
"""

from __future__ import annotations

from pathlib import Path

from l3ha.lab.stack.configs import StackLayout, server_sections
from l3ha.lab.stack.processes import (
    StateFile,
    free_ports,
    port_open,
    run,
    spawn,
    wait_for,
)
from l3ha.lab.stack.services import (
    API_SCRIPT,
    prepare_server,
    start_mariadb,
)
from l3ha.lab.stack.spec import Ports

SCHEMAS = Path("/usr/share/ovn")
OVN_PHYSNET = "physnet1"
DATABASES = (("nb", "ovn-nb"), ("sb", "ovn-sb"))


class OvnCentral:
    """NB and SB ovsdb-servers and ovn-northd under ``root``, recorded in ``state``."""

    def __init__(self, root: Path, state: StateFile) -> None:
        self.root, self.state = root, state

    @property
    def nb(self) -> Path:
        return self.root / "nb.sock"

    @property
    def sb(self) -> Path:
        return self.root / "sb.sock"

    @property
    def logs(self) -> Path:
        return self.root / "log"

    def start(self) -> None:
        """Both databases (created), initialised, then northd."""
        for name, schema in DATABASES:
            run(["ovsdb-tool", "create", str(self.root / f"{name}.db"),
                 str(SCHEMAS / f"{schema}.ovsschema")])  # fmt: skip
            self.start_db(name)
        self.nbctl("init")
        self.sbctl("init")
        argv = ["ovn-northd", f"--ovnnb-db=unix:{self.nb}", f"--ovnsb-db=unix:{self.sb}"]
        argv += [f"--unixctl={self.root / 'northd.ctl'}", f"--log-file={self.logs / 'northd.log'}"]
        self.state.record("ovn/northd", spawn("northd", argv, self.logs))

    def start_db(self, name: str) -> None:
        """The ``nb`` or ``sb`` ovsdb-server on its existing database and socket."""
        sock = self.root / f"{name}.sock"
        sock.unlink(missing_ok=True)
        argv = ["ovsdb-server", str(self.root / f"{name}.db"), f"--remote=punix:{sock}"]
        argv += ["--no-chdir", f"--unixctl={self.root / name}.ctl"]
        argv += [f"--log-file={self.logs / name}.log"]
        self.state.record(f"ovn/{name}", spawn(f"ovsdb-{name}", argv, self.logs))
        wait_for(f"the OVN {name} database", sock.exists, 30)

    def restart_sb(self, down_s: float) -> None:
        """Stop the southbound ovsdb-server for ``down_s`` seconds, then start it again."""
        import time

        self.state.stop("ovn/sb", grace=5)
        time.sleep(down_s)
        self.start_db("sb")

    def nbctl(self, *args: str) -> str:
        return run(["ovn-nbctl", f"--db=unix:{self.nb}", "--no-leader-only", *args])

    def sbctl(self, *args: str) -> str:
        return run(["ovn-sbctl", f"--db=unix:{self.sb}", "--no-leader-only", *args])

    def stop(self) -> None:
        self.state.stop("ovn/northd", "ovn/sb", "ovn/nb", grace=5)


def start_ovn_neutron(
    python: Path,
    layout: StackLayout,
    state: StateFile,
    central: OvnCentral,
    *,
    host: str,
    agent_down_time: int,
) -> int:
    """MariaDB, the schema and the ML2/OVN Neutron API (role ``api``); the API's port."""
    scratch = layout.root / "tmp"
    for directory in (layout.etc, layout.logs, scratch, layout.root / "lock"):
        directory.mkdir(parents=True, exist_ok=True)
    mariadb, api = free_ports(2)
    start_mariadb(layout, state, Ports(mariadb=mariadb, rabbit=0, rabbit_dist=0, epmd=0, api=api))
    conf = ovn_neutron_conf(layout.root, host, mariadb, central, agent_down_time)
    prepare_server(python, layout, conf, OVN_ML2_CONF)
    env = {"ASGI_WORKERS": "1", "TMPDIR": str(scratch), "PYTHONWARNINGS": "ignore"}
    argv = [str(python), str(API_SCRIPT), str(layout.etc), str(api)]
    state.record("api", spawn("api", argv, layout.logs, env=env))
    wait_for("the Neutron ML2/OVN API", lambda: port_open(api), 180)
    return api


def ovn_neutron_conf(
    root: Path, host: str, mariadb_port: int, central: OvnCentral, agent_down_time: int
) -> str:
    """neutron.conf of an ML2/OVN server whose files live under ``root``."""
    return f"""[DEFAULT]
core_plugin = ml2
service_plugins = ovn-router
auth_strategy = noauth
transport_url = fake:/
rpc_workers = 0
rpc_state_report_workers = 0
api_workers = 1
host = {host}
state_path = {root / "server"}
api_paste_config = {root / "etc" / "api-paste.ini"}
agent_down_time = {agent_down_time}
debug = false
log_dir = {root / "log"}

{server_sections(root, mariadb_port)}

[ovn]
ovn_nb_connection = unix:{central.nb}
ovn_sb_connection = unix:{central.sb}
ovn_l3_scheduler = leastloaded
"""


OVN_ML2_CONF = f"""[ml2]
type_drivers = flat,geneve
tenant_network_types = geneve
mechanism_drivers = ovn
extension_drivers = port_security

[ml2_type_flat]
flat_networks = {OVN_PHYSNET}

[ml2_type_geneve]
vni_ranges = 1:1000
max_header_size = 38
"""
