"""Serves a real Neutron API server on loopback for the contract suite; reads config, writes SQLite.

Runs inside the Neutron virtualenv (``L3HA_NEUTRON_PYTHON``), never inside l3ha's: it
imports neutron and must not import l3ha.

    python serve.py --config-dir DIR --port-file FILE

``DIR`` holds ``neutron.conf`` and ``ml2_conf.ini`` (written by the contract fixture).
Before serving, the SQLite schema is built from neutron's models and stamped at the
alembic heads (the migrations themselves do not run on SQLite). The WSGI application
``neutron.wsgi.api:application`` is then served by a threading ``wsgiref`` server on
127.0.0.1 and an ephemeral port, which is written to ``FILE`` once the socket listens.

Requests are handled one at a time (a lock around the application) because SQLite
answers "database is locked" under concurrent writes.

Test-only admin endpoints, outside the Neutron API, drive neutron's own test helpers
(``neutron.tests.common.helpers``) and its L3 agent RPC handler in this process, against
the same database:

    POST /_contract/agents                        {"host": H, "agent_mode": M, "az": Z}
         -> 201 {"agent": {...}}                  register_l3_agent
                                                  ({"agent_type": "dhcp", "host": H, "az": Z}:
                                                  register_dhcp_agent)
    POST /_contract/agents/{id}/kill              -> 204   kill_agent
                                                  ({"seconds_ago": N}: its heartbeat and
                                                  started_at N seconds back instead)
    POST /_contract/agents/{id}/revive            -> 204   revive_agent
    POST /_contract/agents/{id}/admin_state       {"admin_state_up": B} -> 204
                                                  set_agent_admin_state
    POST /_contract/routers/{id}/ha_state         {"host": H, "state": "active"|"standby"}
         -> 204   the agent RPC handler L3RpcCallback.update_ha_routers_states, i.e. what
                  an L3 agent reports after a keepalived transition
    POST /_contract/hosts/{host}/sync             {"full": B, "router_ids": [R...]}
         -> 200 {"router_ids": [...]}   what the L3 agent on {host} asks through the same
                  handler: a full resync (update_all_ha_network_port_statuses, then
                  get_router_ids, which auto-schedules, then sync_routers for those ids),
                  or, not full, only sync_routers for the given ids (a router the agent
                  was told about by RPC)
    POST /_contract/l3-failover-pass              {"dead_limit": S} -> 204
                  one pass of the L3 plugin's periodic check (allow_automatic_l3agent_failover),
                  reschedule_routers_from_down_agents, run now: without its clock-jump wait,
                  and with its dead limit (2 x agent_down_time) replaced by S seconds, so that
                  only agents dead longer than S (killed with a large seconds_ago) count as
                  down; agent liveness (agent_down_time) is unchanged
    POST /_contract/dhcp-failover-pass            {"dead_limit": S} -> 204
                  one pass of the DHCP periodic check (allow_automatic_dhcp_failover),
                  remove_networks_from_down_agents, likewise run now with dead limit S
    POST /_contract/hosts/{host}/dhcp-port        {"network_id": N} -> 200 {"port": {...}}
                  what the DHCP agent on {host} does when it sets a network up, through
                  the DHCP agent RPC handler: claim its own or a reserved DHCP port
                  (update_dhcp_port) or create one (create_dhcp_port)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socketserver
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from wsgiref import simple_server

ADMIN_PREFIX = "/_contract/"

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config-dir", required=True, type=Path)
    parser.add_argument("--port-file", required=True, type=Path)
    return parser.parse_args(argv)


def install_paste_config(config_dir: Path) -> None:
    """Copy the api-paste.ini that the neutron wheel installs under sys.prefix."""
    target = config_dir / "api-paste.ini"
    if target.exists():
        return
    source = Path(sys.prefix) / "etc" / "neutron" / "api-paste.ini"
    if not source.exists():
        sys.exit(f"serve.py: {source} is missing; is neutron installed in this virtualenv?")
    shutil.copyfile(source, target)


def point_neutron_at(config_dir: Path) -> None:
    """Tell neutron's config loader where the files are; keep argv free of our options."""
    os.environ["OS_NEUTRON_CONFIG_DIR"] = str(config_dir)
    os.environ["OS_NEUTRON_CONFIG_FILES"] = "neutron.conf;ml2_conf.ini"
    sys.argv = sys.argv[:1]


def build_schema(config_dir: Path) -> None:
    """Create every table from the models, then stamp the alembic heads."""
    import sqlalchemy
    from neutron.db.migration import cli as migration_cli
    from neutron.db.migration.models import head
    from oslo_config import cfg

    conf = cfg.ConfigOpts()
    conf.register_opts([cfg.StrOpt("connection")], group="database")
    conf(args=[], default_config_files=[str(config_dir / "neutron.conf")])
    engine = sqlalchemy.create_engine(conf.database.connection)
    head.get_metadata().create_all(engine)
    engine.dispose()
    saved_argv = sys.argv
    sys.argv = [
        "neutron-db-manage",
        "--config-file",
        str(config_dir / "neutron.conf"),
        "stamp",
        "heads",
    ]
    try:
        migration_cli.main()
    finally:
        sys.argv = saved_argv


def json_response(start_response: Callable[..., Any], status: str, body: Any = None) -> list[bytes]:
    if body is None:
        start_response(status, [("Content-Length", "0")])
        return [b""]
    data = json.dumps(body).encode()
    start_response(
        status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
    )
    return [data]


def read_json(environ: dict[str, Any]) -> dict[str, Any]:
    length = int(environ.get("CONTENT_LENGTH") or 0)
    raw = environ["wsgi.input"].read(length) if length else b""
    parsed = json.loads(raw) if raw else {}
    return parsed if isinstance(parsed, dict) else {}


def jsonable_agent(agent: Any) -> dict[str, str]:
    """The identity of a registered agent (the helpers return a database object)."""
    return {"id": str(agent["id"]), "host": str(agent["host"])}


NOT_FOUND = "404 Not Found"


def register_agent(body: dict[str, Any]) -> tuple[str, Any]:
    from neutron.tests.common import helpers

    if body.get("agent_type") == "dhcp":
        agent = helpers.register_dhcp_agent(
            host=body["host"], az=body.get("az", helpers.DEFAULT_AZ)
        )
        return "201 Created", {"agent": jsonable_agent(agent)}
    agent = helpers.register_l3_agent(
        host=body["host"],
        agent_mode=body.get("agent_mode", "legacy"),
        az=body.get("az", helpers.DEFAULT_AZ),
    )
    return "201 Created", {"agent": jsonable_agent(agent)}


def change_agent(agent_id: str, action: str, body: dict[str, Any]) -> tuple[str, Any]:
    from neutron.tests.common import helpers

    if action == "kill" and "seconds_ago" in body:
        back_date_agent(agent_id, float(body["seconds_ago"]))
    elif action == "kill":
        helpers.kill_agent(agent_id)
    elif action == "revive":
        helpers.revive_agent(agent_id)
    elif action == "admin_state":
        helpers.set_agent_admin_state(agent_id, bool(body["admin_state_up"]))
    else:
        return NOT_FOUND, {"error": f"no agent action {action}"}
    return "204 No Content", None


def back_date_agent(agent_id: str, seconds: float) -> None:
    """Like helpers.kill_agent, but the heartbeat is ``seconds`` old rather than an hour."""
    import datetime

    from neutron.tests.common import helpers
    from neutron_lib import context
    from oslo_utils import timeutils

    then = timeutils.utcnow() - datetime.timedelta(seconds=seconds)
    helpers.FakePlugin().update_agent(
        context.get_admin_context(),
        agent_id,
        {"agent": {"started_at": then, "heartbeat_timestamp": then}},
    )


def l3_failover_pass(body: dict[str, Any]) -> tuple[str, Any]:
    """One pass of the periodic L3 rescheduler, now, with the dead limit the test chose."""
    from unittest import mock

    from neutron_lib.plugins import constants as plugin_constants
    from neutron_lib.plugins import directory
    from oslo_utils import timeutils

    plugin = directory.get_plugin(plugin_constants.L3)
    # wait_down_agents sleeps for the dead limit when the previous pass is long past.
    plugin._clock_jump_canary = timeutils.utcnow()
    limit = float(body["dead_limit"])
    with mock.patch.object(plugin, "agent_dead_limit_seconds", return_value=limit):
        plugin.reschedule_routers_from_down_agents()
    return "204 No Content", None


def dhcp_failover_pass(body: dict[str, Any]) -> tuple[str, Any]:
    """One pass of the periodic DHCP network check, now, with the dead limit the test chose."""
    from unittest import mock

    from neutron_lib.plugins import directory
    from oslo_utils import timeutils

    plugin = directory.get_plugin()
    plugin._clock_jump_canary = timeutils.utcnow()
    limit = float(body["dead_limit"])
    with mock.patch.object(plugin, "agent_dead_limit_seconds", return_value=limit):
        plugin.remove_networks_from_down_agents()
    return "204 No Content", None


def dhcp_port(host: str, body: dict[str, Any]) -> tuple[str, Any]:
    """The DHCP agent's port set-up for one network, through the DHCP agent RPC handler.

    As neutron/agent/linux/dhcp.py DeviceManager.setup_dhcp_port: the port whose device_id
    is this host's DHCP device id, else a reserved DHCP port of the network (claimed with
    update_dhcp_port), else a new one (create_dhcp_port).
    """
    from neutron.api.rpc.handlers.dhcp_rpc import DhcpRpcCallback
    from neutron.common import utils
    from neutron_lib import constants, context
    from neutron_lib.plugins import directory

    rpc, ctx, plugin = DhcpRpcCallback(), context.get_admin_context(), directory.get_plugin()
    network_id = body["network_id"]
    device_id = utils.get_dhcp_agent_device_id(network_id, host)
    ports = plugin.get_ports(
        ctx, filters={"network_id": [network_id], "device_owner": [constants.DEVICE_OWNER_DHCP]}
    )
    own = [p for p in ports if p["device_id"] == device_id]
    reserved = [p for p in ports if p["device_id"] == constants.DEVICE_ID_RESERVED_DHCP_PORT]
    if own:
        port = own[0]
    elif reserved:
        change = {"port": {"network_id": network_id, "device_id": device_id}}
        port = rpc.update_dhcp_port(ctx, host=host, port_id=reserved[0]["id"], port=change)
    else:
        new = {"port": {"network_id": network_id, "device_id": device_id, "name": "",
                        "admin_state_up": True, "tenant_id": plugin.get_network(
                            ctx, network_id)["tenant_id"], "fixed_ips": []}}
        port = rpc.create_dhcp_port(ctx, host=host, port=new)
    return "200 OK", {"port": {"id": port["id"], "device_id": port["device_id"]}}


def report_ha_state(router_id: str, body: dict[str, Any]) -> tuple[str, Any]:
    """What an L3 agent's keepalived-state-change does, through the agent RPC handler."""
    from neutron.api.rpc.handlers.l3_rpc import L3RpcCallback
    from neutron_lib import context

    L3RpcCallback().update_ha_routers_states(
        context.get_admin_context(), states={router_id: body["state"]}, host=body["host"]
    )
    return "204 No Content", None


def sync_host(host: str, body: dict[str, Any]) -> tuple[str, Any]:
    """An L3 agent's sync, through the agent RPC handler (neutron/agent/l3/agent.py)."""
    from neutron.api.rpc.handlers.l3_rpc import L3RpcCallback
    from neutron_lib import context

    rpc, ctx = L3RpcCallback(), context.get_admin_context()
    router_ids = [str(r) for r in body.get("router_ids") or []]
    if body.get("full"):
        rpc.update_all_ha_network_port_statuses(ctx, host=host)
        router_ids = [str(r) for r in rpc.get_router_ids(ctx, host=host)]
    if router_ids:
        rpc.sync_routers(ctx, host=host, router_ids=router_ids)
    return "200 OK", {"router_ids": router_ids}


def dispatch_admin(path: str, body: dict[str, Any]) -> tuple[str, Any]:
    parts = path[len(ADMIN_PREFIX) :].strip("/").split("/")
    if parts == ["agents"]:
        return register_agent(body)
    if len(parts) == 3 and parts[0] == "agents":
        return change_agent(parts[1], parts[2], body)
    if len(parts) == 3 and parts[0] == "routers" and parts[2] == "ha_state":
        return report_ha_state(parts[1], body)
    if len(parts) == 3 and parts[0] == "hosts" and parts[2] == "sync":
        return sync_host(parts[1], body)
    if parts == ["l3-failover-pass"]:
        return l3_failover_pass(body)
    if parts == ["dhcp-failover-pass"]:
        return dhcp_failover_pass(body)
    if len(parts) == 3 and parts[0] == "hosts" and parts[2] == "dhcp-port":
        return dhcp_port(parts[1], body)
    return NOT_FOUND, {"error": f"no admin call {path}"}


def handle_admin(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    """The /_contract/ endpoints: neutron's own helpers, run in this process."""
    if environ["REQUEST_METHOD"] != "POST":
        return json_response(start_response, "405 Method Not Allowed", {"error": "POST only"})
    status, reply = dispatch_admin(environ["PATH_INFO"], read_json(environ))
    return json_response(start_response, status, reply)


def serialised(neutron_app: WsgiApp) -> WsgiApp:
    """One request at a time, admin calls routed to the test helpers."""
    lock = threading.Lock()

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        with lock:
            if environ["PATH_INFO"].startswith(ADMIN_PREFIX):
                return handle_admin(environ, start_response)
            result = neutron_app(environ, start_response)
            try:
                return list(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()

    return app


class ThreadingWSGIServer(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True


class AccessLogHandler(simple_server.WSGIRequestHandler):
    """One access line per request on stderr (the fixture's server.log)."""

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write("access: " + (format % args) + "\n")


def install_network_scheduler() -> None:
    """Give ML2 its DHCP network scheduler, as ``Ml2Plugin._setup_dhcp`` would.

    ``rpc_workers = 0`` (no RPC server in this test process) makes ML2 skip
    ``_setup_dhcp``, which leaves ``network_scheduler`` unset and every
    ``POST /v2.0/agents/{id}/dhcp-networks`` a 500; the scheduler is the configured
    ``network_scheduler_driver``, and its periodic check is run by /_contract/ calls.
    """
    from neutron_lib.plugins import directory
    from oslo_config import cfg
    from oslo_utils import importutils

    plugin = directory.get_plugin()
    if getattr(plugin, "network_scheduler", None) is None:
        plugin.network_scheduler = importutils.import_object(cfg.CONF.network_scheduler_driver)


def serve(port_file: Path) -> None:
    from neutron.wsgi.api import application

    install_network_scheduler()

    server = simple_server.make_server(
        "127.0.0.1",
        0,
        serialised(application),
        server_class=ThreadingWSGIServer,
        handler_class=AccessLogHandler,
    )
    tmp = port_file.with_suffix(".tmp")
    tmp.write_text(str(server.server_port))
    tmp.replace(port_file)
    server.serve_forever()


def main() -> None:
    args = parse_args(sys.argv[1:])
    install_paste_config(args.config_dir)
    point_neutron_at(args.config_dir)
    build_schema(args.config_dir)
    serve(args.port_file)


if __name__ == "__main__":
    main()
