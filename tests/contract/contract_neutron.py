"""Starts and stops the real Neutron API server for the contract suite; spawns a process.

Writes ``neutron.conf`` and ``ml2_conf.ini`` into a scratch directory, runs
``tests/neutron_server/serve.py`` with the Neutron virtualenv's interpreter
(``L3HA_NEUTRON_PYTHON``), waits for the port file and for ``GET /`` to answer, and
drives agents through serve.py's ``/_contract/`` endpoints, which call
``neutron.tests.common.helpers`` inside the server process against the same database.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.contract.contract_http import Api, call

SERVE_SCRIPT = Path(__file__).resolve().parent.parent / "neutron_server" / "serve.py"
START_TIMEOUT_S = 240.0
PYTHON_ENV = "L3HA_NEUTRON_PYTHON"

# agent_down_time is long so that agents registered at the start of the session (which
# never report) stay alive for the whole run; kill_agent() dates the heartbeat an hour
# back, far beyond it.
AGENT_DOWN_TIME_S = 1800

# The dead limit of a failover pass (neutron's is 2 x agent_down_time): a day, far longer
# than any agent killed by kill_agent (an hour back) has been dead, so the pass takes only
# the bindings of agents made long_dead(), whose heartbeat is twice as old.
FAILOVER_DEAD_LIMIT_S = 86400


def neutron_conf(state_dir: Path) -> str:
    return f"""[DEFAULT]
core_plugin = ml2
service_plugins = router
auth_strategy = noauth
transport_url = fake:/
rpc_workers = 0
rpc_state_report_workers = 0
api_workers = 1
host = contract-server
state_path = {state_dir}
api_paste_config = {state_dir / "api-paste.ini"}
agent_down_time = {AGENT_DOWN_TIME_S}
l3_ha = false
max_l3_agents_per_router = 3
l3_ha_network_type = flat
l3_ha_network_physical_name = ha
allow_automatic_l3agent_failover = false
debug = false

[quotas]
quota_router = -1
quota_network = -1
quota_subnet = -1
quota_port = -1

[database]
connection = sqlite:///{state_dir / "neutron.sqlite"}

[oslo_concurrency]
lock_path = {state_dir / "lock"}
"""


ML2_CONF = """[ml2]
type_drivers = flat
tenant_network_types =
mechanism_drivers =
extension_drivers =

[ml2_type_flat]
flat_networks = *
"""


def configured_python() -> tuple[Path | None, str]:
    """The Neutron interpreter, or None and the reason it cannot be used."""
    value = os.environ.get(PYTHON_ENV, "")
    if not value:
        return None, f"{PYTHON_ENV} is not set (make test sets it to .venv-neutron/bin/python)"
    path = Path(value)
    if not path.exists():
        return None, f"{PYTHON_ENV}={value} does not exist (run make test to create it)"
    return path, ""


#: A full resync's answer (see ``NeutronBackend.full_resync``).
FULL_RESYNC_TIMEOUT_S = 240.0


@dataclass(frozen=True)
class AgentRef:
    """An agent a test owns: its id and host."""

    id: str
    host: str


class NeutronServer:
    """One serve.py process on 127.0.0.1 and an ephemeral port."""

    def __init__(self, python: Path, state_dir: Path, extra_conf: str = "") -> None:
        """``extra_conf``: more neutron.conf sections (e.g. ``[oslo_policy]``), appended."""
        self.python = python
        self.extra_conf = extra_conf
        self.state_dir = state_dir
        self.log_path = state_dir / "server.log"
        self.port_file = state_dir / "port"
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.startup_s = 0.0

    def start(self) -> None:
        conf = neutron_conf(self.state_dir) + self.extra_conf
        (self.state_dir / "neutron.conf").write_text(conf)
        (self.state_dir / "ml2_conf.ini").write_text(ML2_CONF)
        (self.state_dir / "lock").mkdir(exist_ok=True)
        began = time.monotonic()
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [
                    str(self.python),
                    str(SERVE_SCRIPT),
                    "--config-dir",
                    str(self.state_dir),
                    "--port-file",
                    str(self.port_file),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.state_dir,
            )
        port = self._wait_for_port(began)
        self.url = f"http://127.0.0.1:{port}/"
        self._wait_for_root(began)
        self.startup_s = time.monotonic() - began

    def _failure(self, what: str) -> RuntimeError:
        tail = self.log_path.read_text(errors="replace")[-4000:]
        return RuntimeError(f"neutron server {what}; last log lines:\n{tail}")

    def _wait_for_port(self, began: float) -> int:
        assert self.process is not None
        while time.monotonic() - began < START_TIMEOUT_S:
            if self.port_file.exists():
                return int(self.port_file.read_text())
            if self.process.poll() is not None:
                raise self._failure(f"exited with {self.process.returncode} before listening")
            time.sleep(0.2)
        raise self._failure(f"did not listen within {START_TIMEOUT_S:.0f} s")

    def _wait_for_root(self, began: float) -> None:
        while time.monotonic() - began < START_TIMEOUT_S:
            try:
                if call(self.url).status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise self._failure("did not answer GET /")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)


class NeutronBackend:
    """The contract suite's view of the real server: agents through neutron's test helpers."""

    name = "neutron"

    def __init__(self, server: NeutronServer) -> None:
        self.server = server
        self.url = server.url
        self.api = Api(server.url)
        self._count = 0

    def new_agent(self, mode: str = "legacy") -> AgentRef:
        """Register a fresh, alive L3 agent (register_l3_agent)."""
        self._count += 1
        host = f"net-{mode.replace('_', '-')}-{self._count}"
        reply = self.api.post("/_contract/agents", {"host": host, "agent_mode": mode})
        if reply.status != 201:
            raise AssertionError(f"registering agent {host}: {reply.status} {reply.text}")
        return AgentRef(id=str(reply.json()["agent"]["id"]), host=host)

    def new_dhcp_agent(self) -> AgentRef:
        """Register a fresh, alive DHCP agent (register_dhcp_agent)."""
        self._count += 1
        host = f"dhcp-{self._count}"
        reply = self.api.post("/_contract/agents", {"host": host, "agent_type": "dhcp"})
        if reply.status != 201:
            raise AssertionError(f"registering DHCP agent {host}: {reply.status} {reply.text}")
        return AgentRef(id=str(reply.json()["agent"]["id"]), host=host)

    def dhcp_setup(self, agent: AgentRef, network_id: str) -> None:
        """What the agent does when it sets the network up: its DHCP port through the
        DHCP agent RPC handler (own, reserved or new)."""
        path = f"/_contract/hosts/{agent.host}/dhcp-port"
        reply = self.api.post(path, {"network_id": network_id})
        if reply.status != 200:
            raise AssertionError(f"DHCP port of {agent.host}: {reply.status} {reply.text}")

    def dhcp_failover_pass(self) -> None:
        """One pass of the periodic DHCP check (remove_networks_from_down_agents)."""
        reply = self.api.post(
            "/_contract/dhcp-failover-pass", {"dead_limit": FAILOVER_DEAD_LIMIT_S}
        )
        if reply.status != 204:
            raise AssertionError(f"DHCP failover pass: {reply.status} {reply.text}")

    def _admin(self, agent: AgentRef, action: str, body: object = None) -> None:
        reply = self.api.post(f"/_contract/agents/{agent.id}/{action}", body)
        if reply.status != 204:
            raise AssertionError(f"{action} {agent.host}: {reply.status} {reply.text}")

    def kill_agent(self, agent: AgentRef) -> None:
        """Make the agent dead as the API reports it (kill_agent)."""
        self._admin(agent, "kill")

    def long_dead(self, agent: AgentRef) -> None:
        """Make the agent dead for longer than a failover pass's dead limit."""
        self._admin(agent, "kill", {"seconds_ago": 2 * FAILOVER_DEAD_LIMIT_S})

    def failover_pass(self) -> None:
        """One pass of the periodic L3 rescheduler (reschedule_routers_from_down_agents)."""
        reply = self.api.post("/_contract/l3-failover-pass", {"dead_limit": FAILOVER_DEAD_LIMIT_S})
        if reply.status != 204:
            raise AssertionError(f"failover pass: {reply.status} {reply.text}")

    def revive_agent(self, agent: AgentRef) -> None:
        """Restart the agent: alive again, new started_at (revive_agent)."""
        self._admin(agent, "revive")

    def set_admin_state(self, agent: AgentRef, up: bool) -> None:
        """Enable or disable the agent (set_agent_admin_state)."""
        self._admin(agent, "admin_state", {"admin_state_up": up})

    def kill_agents(self, agents: list[AgentRef]) -> None:
        """Several agents dead at once."""
        for agent in agents:
            self.kill_agent(agent)

    def cut_off(self, agent: AgentRef) -> None:
        """Nothing to do: the real server's agents never sync unless a test makes them."""

    def full_resync(self, agent: AgentRef) -> list[str]:
        """The agent's full resync through the agent RPC handler; the router ids it got."""
        # A full resync auto-schedules every unhosted router in the shared database to this
        # agent, one transaction each: after the other contract files it can take minutes.
        reply = self.api.post(
            f"/_contract/hosts/{agent.host}/sync", {"full": True}, timeout=FULL_RESYNC_TIMEOUT_S
        )
        if reply.status != 200:
            raise AssertionError(f"full resync of {agent.host}: {reply.status} {reply.text}")
        return [str(r) for r in reply.json()["router_ids"]]

    def settle_ha(self, router_id: str) -> str:
        """Report the first hosting agent active and the others standby, as agents would."""
        hosting = self.api.get(f"/v2.0/routers/{router_id}/l3-agents").json()["agents"]
        return self._report_ha(router_id, hosting)

    def settle_ha_live(self, router_id: str) -> None:
        """Only replicas on live agents report (dead ones cannot): first active, rest standby."""
        hosting = self.api.get(f"/v2.0/routers/{router_id}/l3-agents").json()["agents"]
        self._report_ha(router_id, [agent for agent in hosting if agent["alive"]])

    def _report_ha(self, router_id: str, hosting: list[dict[str, Any]]) -> str:
        for index, agent in enumerate(hosting):
            state = "active" if index == 0 else "standby"
            reply = self.api.post(
                f"/_contract/routers/{router_id}/ha_state", {"host": agent["host"], "state": state}
            )
            if reply.status != 204:
                raise AssertionError(f"reporting {state} for {agent['host']}: {reply.text}")
        return str(hosting[0]["id"])

    def router_with_usage(self, interfaces: int, floating_ips: int) -> str:
        """A router with ``interfaces`` interface ports and ``floating_ips`` floating IPs, made
        through the API: its own networks (flat, one physical network each), a gateway on an
        external network, a port per floating IP behind it; plus one floating IP that is not
        associated at all."""
        self._count += 1
        tag = f"usage-{self._count}"
        router = self.api.create_router(f"contract-{tag}")
        external = self._network(f"{tag}-ext", external=True)
        self._subnet(external, f"172.31.{self._count}.0/24")
        gateway = {"router": {"external_gateway_info": {"network_id": external}}}
        self._ok(self.api.put(f"/v2.0/routers/{router}", gateway), "gateway")
        private: list[str] = []
        for index in range(interfaces):
            net = self._network(f"{tag}-int{index}")
            subnet = {"subnet_id": self._subnet(net, f"10.{self._count}.{index}.0/24")}
            self._ok(self.api.put(f"/v2.0/routers/{router}/add_router_interface", subnet), "rif")
            private.append(net)
        for index in range(floating_ips):
            port = {"port": {"network_id": private[index % len(private)], "name": f"{tag}-{index}"}}
            port_id = self._ok(self.api.post("/v2.0/ports", port), "port")["port"]["id"]
            fip = {"floatingip": {"floating_network_id": external, "port_id": port_id}}
            self._ok(self.api.post("/v2.0/floatingips", fip), "floating IP")
        loose = {"floatingip": {"floating_network_id": external}}
        self._ok(self.api.post("/v2.0/floatingips", loose), "unassociated floating IP")
        return router

    def _network(self, name: str, external: bool = False) -> str:
        attributes = {
            "name": name,
            "provider:network_type": "flat",
            "provider:physical_network": name,
            "router:external": external,
        }
        reply = self.api.post("/v2.0/networks", {"network": attributes})
        return str(self._ok(reply, "network")["network"]["id"])

    def _subnet(self, network: str, cidr: str) -> str:
        body = {"subnet": {"network_id": network, "cidr": cidr, "ip_version": 4}}
        return str(self._ok(self.api.post("/v2.0/subnets", body), "subnet")["subnet"]["id"])

    @staticmethod
    def _ok(reply: Any, what: str) -> Any:
        if reply.status not in (200, 201):
            raise AssertionError(f"creating {what}: {reply.status} {reply.text}")
        return reply.json()
