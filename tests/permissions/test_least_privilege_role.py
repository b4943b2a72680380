"""The least-privilege role of docs/permissions.md, checked against a real Neutron server.

The server enforces its policy (see ``conftest``); l3ha runs as a subprocess through
openstacksdk, as a user of project ``ops`` whose only role is ``l3ha``, never admin.
It lists agents and routers (HA and tags included, which Neutron hides from
non-admins by default), drains and undrains an agent, reads every project's DHCP
networks and moves one between DHCP agents (``dhcp drain``); a plain project member is
refused with one line and exit 2, and changes nothing; without the recipe the l3ha
role is refused too.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from subprocess import PIPE
from typing import Any

import pytest
import yaml
from tests.contract.contract_http import Api
from tests.contract.contract_neutron import NeutronServer
from tests.permissions.conftest import POLICY_FILE, neutron_python, policed_server
from tests.permissions.role_proxy import RoleProxy

pytestmark = [pytest.mark.neutron, pytest.mark.slow]

DOCS = Path(__file__).parents[2] / "docs" / "permissions.md"


def l3ha(proxy: RoleProxy, tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """One l3ha command against the proxy (clouds.yaml with auth_type none)."""
    return subprocess.run(
        [sys.executable, "-m", "l3ha.cli.main", *argv],
        env=role_env(proxy, tmp_path),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def l3ha_started(proxy: RoleProxy, tmp_path: Path, *argv: str) -> subprocess.Popen[str]:
    """``l3ha`` as in ``l3ha()``, left running."""
    command = [sys.executable, "-m", "l3ha.cli.main", *argv]
    env = role_env(proxy, tmp_path)
    return subprocess.Popen(command, env=env, stdout=PIPE, stderr=PIPE, text=True)


def role_env(proxy: RoleProxy, tmp_path: Path) -> dict[str, str]:
    """The environment of an l3ha reaching the cloud through the proxy, and nothing else."""
    clouds = tmp_path / "clouds.yaml"
    clouds.write_text(
        f"clouds:\n  policed:\n    auth_type: none\n    network_endpoint_override: {proxy.url}\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.update(
        OS_CLIENT_CONFIG_FILE=str(clouds),
        OS_CLOUD="policed",
        L3HA_STATE_DIR=str(tmp_path / "state"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
    )
    return env


def new_agent(admin: Api, host: str) -> str:
    reply = admin.post("/_contract/agents", {"host": host})
    assert reply.status == 201, reply.text
    return str(reply.json()["agent"]["id"])


def new_router(admin: Api, name: str, project: str, ha: bool = False) -> str:
    body = {"router": {"name": name, "project_id": project, "ha": ha}}
    reply = admin.post("/v2.0/routers", body)
    assert reply.status == 201, reply.text
    router = str(reply.json()["router"]["id"])
    for agent in admin.hosting_agent_ids(router):  # a new HA router is scheduled at once
        assert admin.unbind(agent, router).status == 204
    return router


def bind(admin: Api, agent: str, router: str) -> None:
    reply = admin.bind(agent, router)
    assert reply.status == 201, reply.text


def routers_on(admin: Api, agent: str) -> set[str]:
    reply = admin.get(f"/v2.0/agents/{agent}/l3-routers")
    assert reply.status == 200, reply.text
    return {r["id"] for r in reply.json()["routers"]}


def test_the_l3ha_role_lists_drains_and_undrains_without_admin(
    neutron_with_recipe: NeutronServer, admin: Api, tmp_path: Path
) -> None:
    a, b, c = (new_agent(admin, f"role-net-{n}") for n in (1, 2, 3))
    plain = new_router(admin, "role-plain", "tenant-a")
    busy = new_router(admin, "role-busy", "tenant-b")
    assert admin.put(f"/v2.0/routers/{busy}/tags/l3ha:busy").status in (200, 201)
    ha = new_router(admin, "role-ha", "tenant-b", ha=True)
    for router in (plain, busy, ha):
        bind(admin, a, router)
    bind(admin, b, ha)

    with RoleProxy(neutron_with_recipe.url, "ops", ["l3ha"]) as proxy:
        listed = l3ha(proxy, tmp_path, "agent", "list", "-f", "json")
        assert listed.returncode == 0, listed.stderr
        hosts = {row["host"]: row for row in json.loads(listed.stdout)}
        assert {"role-net-1", "role-net-2", "role-net-3"} <= set(hosts)
        assert hosts["role-net-1"]["routers"] == 3

        listed = l3ha(proxy, tmp_path, "router", "list", "-f", "json")
        assert listed.returncode == 0, listed.stderr
        rows = {row["name"]: row for row in json.loads(listed.stdout)}
        assert rows["role-ha"]["ha"] is True  # get_router:ha
        assert rows["role-busy"]["busy"] is True  # get_router:tags, another project's router
        assert rows["role-plain"]["agents"] == ["role-net-1"]

        drained = l3ha(proxy, tmp_path, "drain", "role-net-1", "--no-wait")
        assert drained.returncode == 0, drained.stdout + drained.stderr
        assert routers_on(admin, a) == set()
        assert admin.agent(a)["admin_state_up"] is False
        assert plain in routers_on(admin, b) | routers_on(admin, c)
        assert admin.hosting_agent_ids(ha) == {b, c}  # the replica was replaced

        undrained = l3ha(proxy, tmp_path, "undrain", "role-net-1")
        assert undrained.returncode == 0, undrained.stdout + undrained.stderr
        assert admin.agent(a)["admin_state_up"] is True


def test_the_l3ha_role_reads_every_projects_dhcp_networks(
    neutron_with_recipe: NeutronServer, admin: Api, tmp_path: Path
) -> None:
    reply = admin.post("/_contract/agents", {"host": "role-dhcp-1", "agent_type": "dhcp"})
    assert reply.status == 201, reply.text
    agent = str(reply.json()["agent"]["id"])
    network = {
        "name": "role-net",
        "project_id": "tenant-c",
        "provider:network_type": "flat",
        "provider:physical_network": "role-dhcp",
    }
    reply = admin.post("/v2.0/networks", {"network": network})
    assert reply.status == 201, reply.text
    network_id = str(reply.json()["network"]["id"])
    subnet = {"network_id": network_id, "cidr": "10.77.0.0/24", "ip_version": 4}
    reply = admin.post("/v2.0/subnets", {"subnet": {**subnet, "project_id": "tenant-c"}})
    assert reply.status == 201, reply.text
    reply = admin.post(f"/v2.0/agents/{agent}/dhcp-networks", {"network_id": network_id})
    assert reply.status == 201, reply.text

    with RoleProxy(neutron_with_recipe.url, "ops", ["l3ha"]) as proxy:
        listed = l3ha(proxy, tmp_path, "agent", "list", "--type", "dhcp", "-f", "json")
        audited = l3ha(proxy, tmp_path, "dhcp", "audit", "-f", "json")
    assert listed.returncode == 0, listed.stderr
    (row,) = [r for r in json.loads(listed.stdout) if r["host"] == "role-dhcp-1"]
    assert row["networks"] == 1  # get_dhcp-networks, another project's network
    assert audited.returncode == 0, audited.stdout + audited.stderr
    perfdata = json.loads(audited.stdout)["perfdata"]
    every_network = admin.get("/v2.0/networks").json()["networks"]
    assert network_id in {n["id"] for n in every_network}
    assert perfdata["networks"] == len(every_network)  # get_network, every project's
    assert perfdata["networks_without_dhcp"] == 0


def test_a_plain_project_member_is_refused_and_nothing_changes(
    neutron_with_recipe: NeutronServer, admin: Api, tmp_path: Path
) -> None:
    agent = new_agent(admin, "member-net-1")
    new_agent(admin, "member-net-2")
    router = new_router(admin, "member-router", "tenant-a")
    bind(admin, agent, router)

    with RoleProxy(neutron_with_recipe.url, "tenant-a", ["member", "reader"]) as proxy:
        for argv in (
            ["agent", "list"],
            ["drain", "member-net-1", "--no-wait"],
            ["agent", "list", "--type", "dhcp"],
        ):
            refused = l3ha(proxy, tmp_path, *argv)
            assert refused.returncode == 2, refused.stdout + refused.stderr
            assert refused.stdout == ""
            assert len(refused.stderr.splitlines()) == 1, refused.stderr
            assert "PolicyNotAuthorized" in refused.stderr
            assert "docs/permissions.md" in refused.stderr
    assert routers_on(admin, agent) == {router}
    assert admin.agent(agent)["admin_state_up"] is True


def test_without_the_recipe_the_l3ha_role_is_refused(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    server = policed_server(neutron_python(), tmp_path_factory.mktemp("neutron-default"), None)
    try:
        server.start()
        with RoleProxy(server.url, "admin-project", ["admin"]) as proxy:
            new_agent(Api(proxy.url), "default-net-1")
        with RoleProxy(server.url, "ops", ["l3ha"]) as proxy:
            refused = l3ha(proxy, tmp_path, "agent", "list")
    finally:
        server.stop()
    assert refused.returncode == 2
    assert "rule:get_l3-routers is disallowed by policy" in refused.stderr


def neutron_defaults(names: list[str]) -> dict[str, str]:
    """The check strings of Neutron's own policy defaults, read in its virtualenv."""
    script = (
        "import json, sys\n"
        "from neutron.conf import policies\n"
        "rules = {r.name: r.check_str for r in policies.list_rules()}\n"
        "print(json.dumps({n: rules.get(n) for n in json.loads(sys.argv[1])}))\n"
    )
    done = subprocess.run(
        [str(neutron_python()), "-W", "ignore", "-c", script, json.dumps(names)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    defaults: dict[str, str] = json.loads(done.stdout.splitlines()[-1])
    return defaults


def recipe() -> dict[str, str]:
    rules: dict[str, Any] = yaml.safe_load(POLICY_FILE.read_text(encoding="utf-8"))
    return {str(name): str(rule) for name, rule in rules.items()}


def test_the_recipe_only_adds_the_l3ha_role_to_neutrons_defaults() -> None:
    rules = recipe()
    defaults = neutron_defaults(list(rules))
    assert rules.pop("l3ha") == "role:l3ha"
    assert defaults.pop("l3ha") is None  # a new rule, no default replaced
    assert defaults.pop("context_with_global_access") == "!"  # nobody, by default
    assert rules.pop("context_with_global_access") == "rule:l3ha"
    for name, rule in rules.items():
        assert defaults[name] is not None, f"{name}: not a Neutron 29 rule"
        assert rule == f"({defaults[name]}) or rule:l3ha", name


def test_the_page_names_every_rule_of_the_recipe_and_the_recipe_every_rule_of_the_page() -> None:
    page = DOCS.read_text(encoding="utf-8")
    named = set(re_rules(page))
    assert named == set(recipe()) - {"l3ha"}


def re_rules(page: str) -> list[str]:
    """The rule names in the page's table (its second column, in backquotes)."""
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    return [name for row in rows for name in row.split("|")[2].replace("`", " ").split()]


def test_a_read_only_recipe_serves_check_and_refuses_moves(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """The monitoring account of docs/permissions.md: the recipe without its writes."""
    writes = ("update_agent", "create_", "delete_")
    reads = {name: rule for name, rule in recipe().items() if not name.startswith(writes)}
    policy = tmp_path / "read-only-policy.yaml"
    policy.write_text(yaml.safe_dump(reads), encoding="utf-8")
    server = policed_server(neutron_python(), tmp_path_factory.mktemp("neutron-ro"), policy)
    try:
        server.start()
        with RoleProxy(server.url, "admin-project", ["admin"]) as proxy:
            admin = Api(proxy.url)
            source, _other = new_agent(admin, "ro-net-1"), new_agent(admin, "ro-net-2")
            router = new_router(admin, "ro-router", "tenant-a")
            bind(admin, source, router)
            with RoleProxy(server.url, "ops", ["l3ha"]) as reader:
                checked = l3ha(reader, tmp_path, "check")
                drained = l3ha(reader, tmp_path, "drain", "ro-net-1", "--no-wait")
            assert routers_on(admin, source) == {router}
            assert admin.agent(source)["admin_state_up"] is True
    finally:
        server.stop()
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("L3HA OK"), checked.stdout
    assert drained.returncode == 1, drained.stdout + drained.stderr
    assert "rule:delete_l3-router is disallowed by policy" in drained.stdout  # the move failed
    assert "left enabled" in drained.stderr


def dhcp_network(admin: Api, name: str, project: str, cidr: str) -> str:
    """A network of ``project`` with a DHCP subnet, on no DHCP agent yet."""
    body = {"name": name, "project_id": project, "provider:network_type": "flat"}
    reply = admin.post("/v2.0/networks", {"network": {**body, "provider:physical_network": name}})
    assert reply.status == 201, reply.text
    network = str(reply.json()["network"]["id"])
    subnet = {"network_id": network, "cidr": cidr, "ip_version": 4, "project_id": project}
    reply = admin.post("/v2.0/subnets", {"subnet": subnet})
    assert reply.status == 201, reply.text
    for agent in dhcp_hosts(admin, network):  # whatever Neutron scheduled itself
        assert admin.delete(f"/v2.0/agents/{agent}/dhcp-networks/{network}").status == 204
    return network


def dhcp_hosts(admin: Api, network: str) -> set[str]:
    reply = admin.get(f"/v2.0/networks/{network}/dhcp-agents")
    assert reply.status == 200, reply.text
    return {agent["id"] for agent in reply.json()["agents"]}


def serve_dhcp(server: NeutronServer, admin: Api, host: str, network: str) -> None:
    """What the DHCP agent on ``host`` does for ``network``: set up its DHCP port (the RPC
    handler), then report it ready, which makes it ACTIVE. The test server has no agents
    and no mechanism driver to bind the port, so that status is written in its database."""
    reply = admin.post(f"/_contract/hosts/{host}/dhcp-port", {"network_id": network})
    assert reply.status == 200, reply.text
    port = reply.json()["port"]["id"]
    with sqlite3.connect(server.state_dir / "neutron.sqlite", timeout=30) as db:
        db.execute("UPDATE ports SET status = 'ACTIVE' WHERE id = ?", (port,))


def test_the_l3ha_role_moves_a_network_between_dhcp_agents_without_admin(
    neutron_with_recipe: NeutronServer, admin: Api, tmp_path: Path
) -> None:
    """``l3ha dhcp drain`` as the role: create_dhcp-network on the target, get_dhcp-agents
    (the read-back), get_port of the DHCP ports, delete_dhcp-network on the source."""
    agents = {}
    for host in ("role-dhcp-src", "role-dhcp-dst"):
        reply = admin.post("/_contract/agents", {"host": host, "agent_type": "dhcp"})
        assert reply.status == 201, reply.text
        agents[host] = str(reply.json()["agent"]["id"])
    network = dhcp_network(admin, "role-dhcp-move", "tenant-d", "10.78.0.0/24")
    reply = admin.post(
        f"/v2.0/agents/{agents['role-dhcp-src']}/dhcp-networks", {"network_id": network}
    )
    assert reply.status == 201, reply.text
    serve_dhcp(neutron_with_recipe, admin, "role-dhcp-src", network)

    with RoleProxy(neutron_with_recipe.url, "ops", ["l3ha"]) as proxy:
        argv = ["dhcp", "drain", "role-dhcp-src", "--to", "role-dhcp-dst", "-f", "json"]
        drain = l3ha_started(proxy, tmp_path, *argv, "--port-timeout", "90")
        deadline = time.monotonic() + 90
        while agents["role-dhcp-dst"] not in dhcp_hosts(admin, network):  # the role's add
            assert drain.poll() is None and time.monotonic() < deadline, "no add on the target"
            time.sleep(0.2)
        serve_dhcp(neutron_with_recipe, admin, "role-dhcp-dst", network)
        out, err = drain.communicate(timeout=180)
    assert drain.returncode == 0, out + err
    assert dhcp_hosts(admin, network) == {agents["role-dhcp-dst"]}  # the role's remove
    assert admin.agent(agents["role-dhcp-src"])["admin_state_up"] is False
    summary = json.loads(out)
    assert summary["exit_code"] == 0 and summary["problems"] == [], out
    (run,) = summary["runs"]
    assert network in json.dumps(run) and '"moved"' in json.dumps(run), out
