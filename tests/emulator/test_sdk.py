"""openstacksdk against the emulator: discovery, paging, agents, bind/unbind, codes, keystone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from l3ha.clock import ManualClock
from l3ha.emulator import CLOUD_NAME, Emulator

from .conftest import make


def connect(emu: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    import openstack

    path = emu.write_clouds_yaml(tmp_path / "clouds.yaml")
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(path))
    return openstack.connect(cloud=CLOUD_NAME)


@pytest.fixture
def sdk_emu() -> Iterator[Emulator]:
    with make(ManualClock(), agents=5, routers=12, ha_routers=2, azs=2) as emu:
        yield emu


def test_noauth_discovery_and_paged_agents(sdk_emu: Emulator, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    conn = connect(sdk_emu, tmp_path, monkeypatch)
    agents = list(conn.network.agents(limit=2))
    assert sorted(a.host for a in agents) == [f"net-{n}" for n in range(1, 6)]
    assert len(list(conn.network.routers(limit=5))) == 12
    assert all(a.is_alive for a in agents)


def test_bind_unbind_and_conflicts(sdk_emu: Emulator, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    conn = connect(sdk_emu, tmp_path, monkeypatch)
    ids = sdk_emu.agent_ids_by_host()
    router = conn.network.find_router("router-0004")  # legacy, on net-4
    hosting = [a.host for a in conn.network.routers_hosting_l3_agents(router)]
    assert hosting == ["net-4"]
    result = conn.network.add_router_to_agent(ids["net-5"], router)
    assert "RouterHostedByL3Agent" in str(result)  # the SDK returns, does not raise, on 409
    conn.network.remove_router_from_agent(ids["net-4"], router)
    assert list(conn.network.routers_hosting_l3_agents(router)) == []
    conn.network.remove_router_from_agent(ids["net-4"], router)  # idempotent
    conn.network.add_router_to_agent(ids["net-5"], router)
    assert [a.host for a in conn.network.routers_hosting_l3_agents(router)] == ["net-5"]
    hosted = {r.name for r in conn.network.agent_hosted_routers(ids["net-5"])}
    assert "router-0004" in hosted
    conn.network.update_agent(ids["net-3"], is_admin_state_up=False)
    assert conn.network.get_agent(ids["net-3"]).is_admin_state_up is False


def test_ha_state_through_sdk(sdk_emu: Emulator, tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    conn = connect(sdk_emu, tmp_path, monkeypatch)
    router = conn.network.find_router("router-0001")
    states = {a.host: a.ha_state for a in conn.network.routers_hosting_l3_agents(router)}
    assert states == {"net-1": "active", "net-2": "standby"}


def test_keystone_password_auth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import openstack

    with make(ManualClock(), agents=2, routers=2, keystone=True) as emu:
        conn = connect(emu, tmp_path, monkeypatch)
        assert sorted(a.host for a in conn.network.agents()) == ["net-1", "net-2"]
        from .conftest import Http

        api = Http(emu)
        assert api.get("/v2.0/agents")[0] == 401
        assert api.call("GET", "/v2.0/agents", headers={"X-Auth-Token": "forged"})[0] == 401
        wrong = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": "admin", "password": "wrong", "domain": {"name": "Default"}}}}}}
        assert api.call("POST", "/identity/v3/auth/tokens", wrong)[0] == 401
        right = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": emu.cfg.username, "password": emu.cfg.password,
            "domain": {"name": "Default"}}}}}}
        status, doc, headers = api.call("POST", "/identity/v3/auth/tokens", right)
        assert status == 201 and headers["x-subject-token"]
        network = next(s for s in doc["token"]["catalog"] if s["type"] == "network")
        assert network["endpoints"][0]["url"] == emu.url
        bad = tmp_path / "bad.yaml"
        entry = emu.clouds_entry()
        entry["auth"]["password"] = "wrong"
        import yaml

        bad.write_text(yaml.safe_dump({"clouds": {"bad": entry}}))
        monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(bad))
        from keystoneauth1.exceptions.http import Unauthorized

        with pytest.raises(Unauthorized):
            list(openstack.connect(cloud="bad").network.agents())
