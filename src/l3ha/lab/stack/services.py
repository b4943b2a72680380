"""The stack's control plane: MariaDB, RabbitMQ, the Neutron API and RPC servers. I/O: spawns them,
and reads and writes the cached Neutron schema (``SCHEMA_CACHE``).

Each service runs from the stack's directory, on 127.0.0.1 and ports chosen at
bring-up, and is recorded in the state file under its role (``mariadb``,
``epmd``, ``rabbit``, ``api``, ``rpc``, ``periodic``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from l3ha.lab.stack.configs import StackLayout, rabbitmq_conf
from l3ha.lab.stack.processes import (
    StackError,
    StateFile,
    port_open,
    run,
    spawn,
    wait_for,
)
from l3ha.lab.stack.spec import Ports

RABBIT_BIN = Path("/usr/lib/rabbitmq/bin/rabbitmq-server")
API_SCRIPT = Path(__file__).resolve().parent / "neutron_api.py"
NEUTRON_ENV = {"PYTHONWARNINGS": "ignore"}
#: Migrated Neutron schemas, one dump per Neutron virtualenv and version (see migrate_database).
SCHEMA_CACHE = Path(tempfile.gettempdir()) / "l3ha-neutron-schema"


def start_mariadb(layout: StackLayout, state: StateFile, ports: Ports) -> None:
    """A private MariaDB on 127.0.0.1 (grant tables off) holding an empty ``neutron`` database."""
    datadir = layout.mysql
    install = ["mariadb-install-db", "--no-defaults", f"--datadir={datadir}", "--user=root",
               "--skip-test-db", "--auth-root-authentication-method=normal"]  # fmt: skip
    try:
        run(install, timeout=180)
    except StackError:  # seen once: the installer segfaulted on a loaded machine; retry once
        shutil.rmtree(datadir, ignore_errors=True)
        run(install, timeout=180)
    sock = layout.root / "mysql.sock"
    state.record(
        "mariadb",
        spawn(
            "mariadb",
            [
                "mariadbd",
                "--no-defaults",
                f"--datadir={datadir}",
                f"--socket={sock}",
                f"--port={ports.mariadb}",
                "--bind-address=127.0.0.1",
                "--user=root",
                "--skip-grant-tables",
                "--skip-name-resolve",
                "--innodb-buffer-pool-size=64M",
                f"--pid-file={layout.root / 'mysql.pid'}",
                "--max-connections=500",
            ],
            layout.logs,
        ),
    )
    wait_for("MariaDB", lambda: port_open(ports.mariadb), 60)
    run(
        [
            "mariadb",
            "--no-defaults",
            f"--socket={sock}",
            "-e",
            "CREATE DATABASE neutron CHARACTER SET utf8mb4",
        ]
    )


def rabbit_env(layout: StackLayout, ports: Ports) -> dict[str, str]:
    base = layout.rabbit
    return {
        "HOME": str(base),
        "RABBITMQ_CONF_ENV_FILE": str(base / "env.conf"),
        "RABBITMQ_NODENAME": "l3rs@localhost",
        "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
        "RABBITMQ_NODE_PORT": str(ports.rabbit),
        "RABBITMQ_DIST_PORT": str(ports.rabbit_dist),
        "RABBITMQ_MNESIA_BASE": str(base / "mnesia"),
        "RABBITMQ_LOG_BASE": str(base / "log"),
        "RABBITMQ_CONFIG_FILE": str(base / "rabbitmq"),
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(base / "enabled_plugins"),
        "RABBITMQ_PID_FILE": str(base / "rabbit.pid"),
        "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}",
        "ERL_EPMD_PORT": str(ports.epmd),
        "ERL_EPMD_ADDRESS": "127.0.0.1",
        "ERL_CRASH_DUMP": str(base / "erl_crash.dump"),
    }


def start_rabbit(layout: StackLayout, state: StateFile, ports: Ports, wait: bool = True) -> None:
    """epmd (our own, on a private port) then the RabbitMQ node, started directly; with
    ``wait`` returns once it listens (else ``wait_for_rabbit`` does)."""
    base = layout.rabbit
    base.mkdir(parents=True, exist_ok=True)
    (base / "env.conf").write_text("")
    (base / "rabbitmq.conf").write_text(rabbitmq_conf(ports))
    (base / "enabled_plugins").write_text("[].\n")
    if "epmd" not in state.pids:
        state.record(
            "epmd",
            spawn(
                "epmd",
                [
                    "epmd",
                    "-port",
                    str(ports.epmd),
                    "-address",
                    "127.0.0.1",
                ],
                layout.logs,
            ),
        )
        wait_for("epmd", lambda: port_open(ports.epmd), 20)
    state.record(
        "rabbit", spawn("rabbit", [str(RABBIT_BIN)], layout.logs, env=rabbit_env(layout, ports))
    )
    if wait:
        wait_for_rabbit(ports)


def wait_for_rabbit(ports: Ports) -> None:
    wait_for("RabbitMQ", lambda: port_open(ports.rabbit), 90)


def neutron_python() -> Path:
    """The Neutron virtualenv's interpreter (``L3HA_NEUTRON_PYTHON`` or ./.venv-neutron)."""
    configured = os.environ.get("L3HA_NEUTRON_PYTHON")
    python = Path(configured) if configured else Path(".venv-neutron/bin/python").absolute()
    if not python.exists():
        raise StackError(
            f"no Neutron virtualenv at {python}: set L3HA_NEUTRON_PYTHON to its python "
            "(make .venv-neutron/.installed builds one)"
        )
    return python


def neutron_bin(python: Path, name: str) -> str:
    script = python.parent / name
    if not script.exists():
        raise StackError(f"{script} is missing; is neutron installed in that virtualenv?")
    return str(script)


def prepare_server(python: Path, layout: StackLayout, neutron_conf: str, ml2_conf: str) -> None:
    """The server's files in DIR/etc (``neutron_conf``, ``ml2_conf`` and the api-paste.ini the
    neutron wheel installs under the virtualenv's prefix), then its schema in the database."""
    paste = python.parent.parent / "etc" / "neutron" / "api-paste.ini"
    if not paste.exists():
        raise StackError(f"{paste} is missing; is neutron installed in that virtualenv?")
    (layout.etc / "neutron.conf").write_text(neutron_conf)
    (layout.etc / "ml2_conf.ini").write_text(ml2_conf)
    shutil.copyfile(paste, layout.etc / "api-paste.ini")
    migrate_database(python, layout)


def migrate_database(python: Path, layout: StackLayout) -> None:
    """Neutron's schema in the empty ``neutron`` database.

    ``neutron-db-manage upgrade heads`` (about 30 s on the loaded test machine) once per
    Neutron virtualenv; its result is dumped to ``SCHEMA_CACHE`` and later stacks of the
    same virtualenv load the dump instead (a few seconds).
    """
    cached = schema_dump(python)
    if cached is not None and cached.exists():
        _mariadb_client(layout, "mariadb", stdin=cached)
        return
    run(
        [
            str(python),
            neutron_bin(python, "neutron-db-manage"),
            *layout.server_config_args(),
            "upgrade",
            "heads",
        ],
        env=NEUTRON_ENV,
        timeout=300,
    )
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")
        _mariadb_client(layout, "mariadb-dump", stdout=partial)
        partial.replace(cached)


def schema_dump(python: Path) -> Path | None:
    """Where the migrated schema of this Neutron virtualenv is kept (None: no neutron wheel
    found beside ``python``, so nothing is cached). Keyed by the virtualenv and the version."""
    found = sorted(python.parent.parent.glob("lib/python*/site-packages/neutron-*.dist-info"))
    if not found:
        return None
    key = hashlib.sha256(f"{python.parent.parent.resolve()}\0{found[-1].name}".encode())
    return SCHEMA_CACHE / f"neutron-schema-{key.hexdigest()[:16]}.sql"


def _mariadb_client(
    layout: StackLayout, program: str, stdin: Path | None = None, stdout: Path | None = None
) -> None:
    """``mariadb`` or ``mariadb-dump`` on the stack's ``neutron`` database."""
    argv = [program, "--no-defaults", f"--socket={layout.root / 'mysql.sock'}", "neutron"]
    with contextlib.ExitStack() as files:
        source = files.enter_context(open(stdin, "rb")) if stdin else subprocess.DEVNULL
        target = files.enter_context(open(stdout, "wb")) if stdout else subprocess.PIPE
        result = subprocess.run(argv, stdin=source, stdout=target, stderr=subprocess.PIPE,
                                timeout=300, check=False)  # fmt: skip
    if result.returncode != 0:
        lines = result.stderr.decode(errors="replace").strip().splitlines()
        raise StackError(f"{program} neutron: {lines[-1] if lines else 'failed'}")


def _spawn_neutron(python: Path, layout: StackLayout, role: str, argv: list[str]) -> int:
    return spawn(role, [str(python), *argv], layout.logs, env=NEUTRON_ENV)


def start_servers(python: Path, layout: StackLayout, state: StateFile, ports: Ports) -> None:
    """neutron-rpc-server and the API (wsgiref), started; ``wait_for_api`` waits for it."""
    rpc = [neutron_bin(python, "neutron-rpc-server"), *layout.server_config_args()]
    state.record("rpc", _spawn_neutron(python, layout, "rpc", rpc))
    api = ["-P", str(API_SCRIPT), str(layout.etc), str(ports.api)]
    state.record("api", _spawn_neutron(python, layout, "api", api))


def wait_for_api(ports: Ports) -> None:
    wait_for("the Neutron API", lambda: port_open(ports.api), 120)


def start_periodic(python: Path, layout: StackLayout, state: StateFile) -> None:
    """neutron-periodic-workers with allow_automatic_l3agent_failover = True (Neutron's own
    rescheduler: every agent_down_time / 2 it moves routers off agents dead for 2 x that)."""
    failover = layout.etc / "failover.conf"
    failover.write_text("[DEFAULT]\nallow_automatic_l3agent_failover = true\n")
    argv = [neutron_bin(python, "neutron-periodic-workers"), *layout.server_config_args()]
    argv += ["--config-file", str(failover)]
    state.record("periodic", _spawn_neutron(python, layout, "periodic", argv))


def check_pymysql(python: Path) -> None:
    try:
        run([str(python), "-c", "import pymysql"], timeout=60)
    except StackError as exc:
        raise StackError(
            f"{python} cannot import pymysql: install PyMySQL in the Neutron virtualenv"
        ) from exc
