"""The adapter over real HTTP against canned answers: error translation, read-back, wire format.

The canned server (``neutron_fake``) stands for the edges we do not own: a
Neutron or Keystone that answers 401/403/409/503, refuses connections, hangs,
or has no version document. Behaviour of a whole cloud is tested against the
emulator in ``test_cloud_adapter_emulator.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.cloud.neutron_fake import (
    FakeNeutron,
    closed_port,
    l3_agent,
    neutron_error,
    router,
    self_signed_cert,
)

from l3ha.clock import ManualClock
from l3ha.cloud.adapter import NeutronCloud, connect
from l3ha.errors import (
    ApiNotFoundError,
    ApiTimeoutError,
    AuthError,
    CloudError,
    ConfigError,
    ConflictError,
    NotFoundError,
    ReadBackError,
    ServerError,
    UnreachableError,
)
from l3ha.model import HAState


def _cloud(fake: FakeNeutron, **kw: object) -> NeutronCloud:
    return connect(timeout=5, **kw)  # type: ignore[arg-type]


# --- connecting and error translation -------------------------------------------


def test_connects_with_os_auth_type_none_and_os_endpoint(noauth_env: FakeNeutron) -> None:
    noauth_env.answer("GET", "/v2.0/agents", body={"agents": [l3_agent("a1", "net-1")]})
    cloud = _cloud(noauth_env)
    assert [a.host for a in cloud.list_agents()] == ["net-1"]
    (seen,) = noauth_env.seen("GET", "/v2.0/agents")
    assert ("agent_type", "L3 agent") in seen.query


def test_connects_with_named_clouds_yaml_entry(
    fake: FakeNeutron, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = fake.write_clouds_yaml(tmp_path / "clouds.yaml", name="lab")
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(config))
    fake.answer("GET", "/v2.0/agents", body={"agents": []})
    assert connect("lab").list_agents() == []
    monkeypatch.setenv("OS_CLOUD", "lab")
    assert connect().name == "lab"


def test_unknown_cloud_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="nosuch"):
        connect("nosuch")


def test_no_configuration_at_all_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="auth_url"):
        connect()


def test_refused_connection_is_retryable_unreachable_naming_the_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/"
    monkeypatch.setenv("OS_AUTH_TYPE", "none")
    monkeypatch.setenv("OS_ENDPOINT", url)
    with pytest.raises(UnreachableError) as info:
        connect()
    assert info.value.retryable
    assert url in str(info.value)
    assert "connection refused" in str(info.value)


def test_broken_version_discovery_reports_the_real_status(noauth_env: FakeNeutron) -> None:
    noauth_env.answer("GET", "/", 503, neutron_error("ServiceUnavailable", "down"))
    with pytest.raises(ServerError, match="version discovery: HTTP 503") as info:
        connect()
    assert info.value.retryable


def test_plain_http_server_spoken_to_with_tls_is_unreachable(
    fake: FakeNeutron, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OS_AUTH_TYPE", "none")
    monkeypatch.setenv("OS_ENDPOINT", fake.url.replace("http://", "https://"))
    with pytest.raises(UnreachableError, match="TLS"):
        connect(insecure=True)


def test_insecure_logs_a_warning(noauth_env: FakeNeutron, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        connect(insecure=True)
    assert "verification is OFF" in caplog.text


def test_slow_answer_is_a_retryable_timeout(noauth_env: FakeNeutron) -> None:
    noauth_env.answer("GET", "/v2.0/routers", body={"routers": []}, delay=2.0)
    cloud = connect(timeout=0.5)
    with pytest.raises(ApiTimeoutError) as info:
        cloud.list_routers()
    assert info.value.retryable


@pytest.mark.parametrize(
    ("status", "error", "retryable"),
    [(401, AuthError, False), (403, AuthError, False), (503, ServerError, True)],
)
def test_http_errors_on_reads_become_l3ha_errors(
    noauth_env: FakeNeutron, status: int, error: type[CloudError], retryable: bool
) -> None:
    noauth_env.answer("GET", "/v2.0/routers", status, neutron_error("X", "no"))
    cloud = _cloud(noauth_env)
    with pytest.raises(error) as info:
        cloud.list_routers()
    assert info.value.retryable is retryable
    assert "list routers" in str(info.value)
    assert noauth_env.url in str(info.value)


def test_keystone_rejecting_the_password_is_an_auth_error_without_the_password(
    fake: FakeNeutron, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.answer(
        "GET",
        "/v3/",
        body={
            "version": {
                "id": "v3.14",
                "status": "stable",
                "links": [{"rel": "self", "href": f"{fake.url}v3/"}],
            }
        },
    )
    fake.answer("POST", "/v3/auth/tokens", 401, {"error": {"code": 401, "message": "Denied"}})
    config = tmp_path / "clouds.yaml"
    config.write_text(
        "clouds:\n  kc:\n    auth:\n"
        f"      auth_url: {fake.url}v3/\n"
        "      username: admin\n      password: TopSecret99\n      project_name: admin\n"
        "      user_domain_name: Default\n      project_domain_name: Default\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(config))
    with pytest.raises(AuthError) as info:
        connect("kc")
    assert "TopSecret99" not in str(info.value)
    assert info.value.exit_code == 2


# --- reads ----------------------------------------------------------------------


def test_pages_are_followed_through_links(noauth_env: FakeNeutron) -> None:
    nxt = f"{noauth_env.url}v2.0/routers-page2?limit=1&marker=r1"
    noauth_env.answer(
        "GET",
        "/v2.0/routers",
        body={"routers": [router("r1")], "routers_links": [{"rel": "next", "href": nxt}]},
    )
    noauth_env.answer("GET", "/v2.0/routers-page2", body={"routers": [router("r2")]})
    assert [r.id for r in _cloud(noauth_env).list_routers()] == ["r1", "r2"]


def test_non_l3_agents_are_left_out(noauth_env: FakeNeutron) -> None:
    agents = [l3_agent("a1", "net-1"), l3_agent("d1", "net-1", agent_type="DHCP agent")]
    noauth_env.answer("GET", "/v2.0/agents", body={"agents": agents})
    assert [a.id for a in _cloud(noauth_env).list_agents()] == ["a1"]


def test_get_agent_unknown_is_not_found_and_non_l3_is_not_found(noauth_env: FakeNeutron) -> None:
    noauth_env.answer("GET", "/v2.0/agents/gone", 404, neutron_error("AgentNotFound", "x"))
    noauth_env.answer(
        "GET", "/v2.0/agents/d1", body={"agent": l3_agent("d1", "h", agent_type="DHCP agent")}
    )
    cloud = _cloud(noauth_env)
    with pytest.raises(NotFoundError, match="gone"):
        cloud.get_agent("gone")
    with pytest.raises(NotFoundError, match="not an L3 agent"):
        cloud.get_agent("d1")


def test_snapshot_reads_every_agent_and_ha_state(noauth_env: FakeNeutron) -> None:
    agents = [l3_agent(f"a{i}", f"net-{i}") for i in range(1, 6)]
    noauth_env.answer("GET", "/v2.0/agents", body={"agents": agents})
    noauth_env.answer(
        "GET", "/v2.0/routers", body={"routers": [router("r1"), router("h1", ha=True)]}
    )
    for i in range(1, 6):
        hosted = [router("r1")] if i == 1 else [router("h1", ha=True)] if i in (2, 3) else []
        noauth_env.answer("GET", f"/v2.0/agents/a{i}/l3-routers", body={"routers": hosted})
    noauth_env.answer(
        "GET",
        "/v2.0/routers/h1/l3-agents",
        body={
            "agents": [
                {**l3_agent("a2", "net-2"), "ha_state": "active"},
                {**l3_agent("a3", "net-3"), "ha_state": "standby"},
            ]
        },
    )
    clock = ManualClock()
    snap = connect(timeout=5, clock=clock).read_snapshot(with_ha_state=True)
    assert snap.observed_at == clock.wall().isoformat()
    assert {(b.router_id, b.agent_id, b.ha_state) for b in snap.bindings} == {
        ("r1", "a1", None),
        ("h1", "a2", HAState.ACTIVE),
        ("h1", "a3", HAState.STANDBY),
    }
    assert len(noauth_env.seen("GET", "/v2.0/routers/r1/l3-agents")) == 0


def test_snapshot_error_in_one_agent_call_fails_the_read(noauth_env: FakeNeutron) -> None:
    agents = [l3_agent(f"a{i}", f"net-{i}") for i in range(1, 4)]
    noauth_env.answer("GET", "/v2.0/agents", body={"agents": agents})
    noauth_env.answer("GET", "/v2.0/routers", body={"routers": []})
    for i in range(1, 4):
        noauth_env.answer("GET", f"/v2.0/agents/a{i}/l3-routers", body={"routers": []})
    noauth_env.answer("GET", "/v2.0/agents/a2/l3-routers", 503, neutron_error("X", "busy"))
    with pytest.raises(ServerError, match="agent a2"):
        _cloud(noauth_env).read_snapshot()


def test_router_ports_filter_by_device_id(noauth_env: FakeNeutron) -> None:
    port = {"id": "p1", "device_owner": "network:router_gateway", "status": "ACTIVE"}
    body = {"ports": [{**port, "device_id": "r1", "binding:host_id": "net-1"}]}
    noauth_env.answer("GET", "/v2.0/ports", body=body)
    (state,) = _cloud(noauth_env).router_ports("r1")
    assert (state.status, state.host) == ("ACTIVE", "net-1")
    assert ("device_id", "r1") in noauth_env.seen("GET", "/v2.0/ports")[0].query


def test_ports_of_many_routers_are_read_in_one_call_per_chunk(noauth_env: FakeNeutron) -> None:
    from l3ha.cloud.adapter import PORTS_PER_CALL

    routers = [f"r{i}" for i in range(PORTS_PER_CALL + 3)]
    owned = [
        {"id": f"p{i}", "device_id": r, "device_owner": "network:router_gateway", "status": "DOWN"}
        for i, r in enumerate(routers[:2])
    ]
    noauth_env.answer("GET", "/v2.0/ports", body={"ports": owned})
    ports = _cloud(noauth_env).ports_of_routers(routers)
    calls = noauth_env.seen("GET", "/v2.0/ports")
    assert len(calls) == 2  # 43 routers: one call of 40 ids, one of 3
    assert [v for k, v in calls[0].query if k == "device_id"] == routers[:PORTS_PER_CALL]
    assert [v for k, v in calls[1].query if k == "device_id"] == routers[PORTS_PER_CALL:]
    assert [p.id for p in ports["r0"]] == ["p0"] and [p.id for p in ports["r1"]] == ["p1"]
    assert ports["r2"] == [] and set(ports) == set(routers)


# --- writes and read-back -------------------------------------------------------


def _hosted_by(fake: FakeNeutron, router_id: str, *agent_ids: str) -> None:
    agents = [{**l3_agent(a, a), "ha_state": None} for a in agent_ids]
    fake.answer("GET", f"/v2.0/routers/{router_id}/l3-agents", body={"agents": agents})


def test_bind_posts_the_router_id_to_the_agent_id_and_reads_back(noauth_env: FakeNeutron) -> None:
    noauth_env.answer("POST", "/v2.0/agents/a1/l3-routers", 201, None)
    _hosted_by(noauth_env, "r1", "a1")
    _cloud(noauth_env).bind("r1", "a1")
    (post,) = noauth_env.seen("POST", "/v2.0/agents/a1/l3-routers")
    assert post.body == {"router_id": "r1"}
    assert len(noauth_env.seen("GET", "/v2.0/routers/r1/l3-agents")) == 1


def test_bind_409_is_a_conflict_naming_neutron_reason(noauth_env: FakeNeutron) -> None:
    noauth_env.answer(
        "POST",
        "/v2.0/agents/a1/l3-routers",
        409,
        neutron_error("RouterHostedByL3Agent", "The router r1 has been already hosted by a2."),
    )
    with pytest.raises(ConflictError, match="already hosted by a2"):
        _cloud(noauth_env).bind("r1", "a1")


def test_bind_to_admin_down_agent_is_a_conflict_not_a_missing_object(
    noauth_env: FakeNeutron,
) -> None:
    noauth_env.answer(
        "POST", "/v2.0/agents/a1/l3-routers", 404, neutron_error("InvalidL3Agent", "a1 is down")
    )
    with pytest.raises(ConflictError, match="InvalidL3Agent"):
        _cloud(noauth_env).bind("r1", "a1")


def test_bind_of_unknown_router_is_api_not_found(noauth_env: FakeNeutron) -> None:
    noauth_env.answer(
        "POST", "/v2.0/agents/a1/l3-routers", 404, neutron_error("RouterNotFound", "no r9")
    )
    with pytest.raises(ApiNotFoundError, match="RouterNotFound"):
        _cloud(noauth_env).bind("r9", "a1")


def test_bind_accepted_but_not_visible_is_a_read_back_error(noauth_env: FakeNeutron) -> None:
    noauth_env.answer("POST", "/v2.0/agents/a1/l3-routers", 201, None)
    _hosted_by(noauth_env, "r1", "a2")
    with pytest.raises(ReadBackError, match="hosting agents: a2"):
        _cloud(noauth_env).bind("r1", "a1")


def test_unbind_deletes_and_reads_back(noauth_env: FakeNeutron) -> None:
    noauth_env.answer("DELETE", "/v2.0/agents/a1/l3-routers/r1", 204)
    _hosted_by(noauth_env, "r1")
    _cloud(noauth_env).unbind("r1", "a1")
    assert len(noauth_env.seen("DELETE", "/v2.0/agents/a1/l3-routers/r1")) == 1


def test_unbind_still_bound_afterwards_is_a_read_back_error(noauth_env: FakeNeutron) -> None:
    noauth_env.answer("DELETE", "/v2.0/agents/a1/l3-routers/r1", 204)
    _hosted_by(noauth_env, "r1", "a1")
    with pytest.raises(ReadBackError, match="still hosts"):
        _cloud(noauth_env).unbind("r1", "a1")


def test_ids_are_quoted_into_the_path(noauth_env: FakeNeutron) -> None:
    with pytest.raises(ApiNotFoundError):
        _cloud(noauth_env).bind("r1", "../routers")
    assert noauth_env.seen("POST", "/v2.0/agents/..%2Frouters/l3-routers")


def test_set_admin_state_puts_and_reads_back(noauth_env: FakeNeutron) -> None:
    noauth_env.answer("PUT", "/v2.0/agents/a1", body={"agent": l3_agent("a1", "net-1")})
    noauth_env.answer(
        "GET", "/v2.0/agents/a1", body={"agent": l3_agent("a1", "net-1", admin_state_up=False)}
    )
    cloud = _cloud(noauth_env)
    cloud.set_admin_state("a1", False)
    assert noauth_env.seen("PUT", "/v2.0/agents/a1")[0].body == {"agent": {"admin_state_up": False}}
    with pytest.raises(ReadBackError, match="admin_state_up=False"):
        cloud.set_admin_state("a1", True)


def test_set_description_puts_and_reads_back(noauth_env: FakeNeutron) -> None:
    noauth_env.answer("PUT", "/v2.0/agents/a1", body={"agent": l3_agent("a1", "net-1")})
    noauth_env.answer(
        "GET", "/v2.0/agents/a1", body={"agent": l3_agent("a1", "net-1", description="drained")}
    )
    _cloud(noauth_env).set_description("a1", "drained")
    assert noauth_env.seen("PUT", "/v2.0/agents/a1")[0].body == {
        "agent": {"description": "drained"}
    }


# --- TLS ------------------------------------------------------------------------


@pytest.fixture
def tls_fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeNeutron, Path]]:
    cert, key = self_signed_cert(tmp_path)
    server = FakeNeutron(tls=(cert, key)).start()
    server.answer("GET", "/v2.0/agents", body={"agents": [l3_agent("a1", "net-1")]})
    monkeypatch.setenv("OS_AUTH_TYPE", "none")
    monkeypatch.setenv("OS_ENDPOINT", server.url)
    yield server, cert
    server.stop()


def test_untrusted_certificate_is_unreachable_tls_failure(
    tls_fake: tuple[FakeNeutron, Path],
) -> None:
    with pytest.raises(UnreachableError, match="TLS failure") as info:
        connect(timeout=5)
    assert "CERTIFICATE_VERIFY_FAILED" in str(info.value)


def test_ca_bundle_makes_the_certificate_trusted(tls_fake: tuple[FakeNeutron, Path]) -> None:
    _, cert = tls_fake
    assert [a.id for a in connect(cacert=str(cert), timeout=5).list_agents()] == ["a1"]


def test_insecure_skips_verification(tls_fake: tuple[FakeNeutron, Path]) -> None:
    assert [a.id for a in connect(insecure=True, timeout=5).list_agents()] == ["a1"]


def test_missing_ca_bundle_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="CA bundle"):
        connect(cacert=str(tmp_path / "nope.pem"))


def test_pagination_that_ignores_the_marker_is_an_error_not_a_hang(
    noauth_env: FakeNeutron,
) -> None:
    again = f"{noauth_env.url}v2.0/routers?limit=1&marker=r1"
    noauth_env.answer(
        "GET",
        "/v2.0/routers",
        body={"routers": [router("r1")], "routers_links": [{"rel": "next", "href": again}]},
    )
    with pytest.raises(CloudError, match="endless pagination"):
        _cloud(noauth_env).list_routers()


def test_per_agent_reads_run_concurrently_but_bounded(noauth_env: FakeNeutron) -> None:
    agents = [l3_agent(f"a{i}", f"net-{i}") for i in range(12)]
    noauth_env.answer("GET", "/v2.0/agents", body={"agents": agents})
    noauth_env.answer(
        "GET", "/v2.0/routers", body={"routers": [router(f"r{i}") for i in range(12)]}
    )
    for i in range(12):
        noauth_env.answer(
            "GET", f"/v2.0/agents/a{i}/l3-routers", body={"routers": [router(f"r{i}")]}, delay=0.1
        )
    snap = connect(timeout=5, workers=3).read_snapshot()
    assert {(b.router_id, b.agent_id) for b in snap.bindings} == {
        (f"r{i}", f"a{i}") for i in range(12)
    }
    assert noauth_env.max_in_flight == 3
