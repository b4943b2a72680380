"""Neutron wire dicts and HTTP statuses become model objects and l3ha errors (pure translation)."""

from __future__ import annotations

import pytest
from tests.cloud.neutron_fake import l3_agent, neutron_error, router

from l3ha.cloud import translate
from l3ha.errors import (
    ApiNotFoundError,
    ApiTimeoutError,
    AuthError,
    CloudError,
    ConflictError,
    ServerError,
)
from l3ha.model import AgentMode, HAState


def test_l3_agent_dict_becomes_agent_with_mode_az_and_timestamps() -> None:
    data = l3_agent(
        "a1",
        "net-1",
        availability_zone="az2",
        alive=False,
        admin_state_up=False,
        heartbeat_timestamp="2026-03-01 10:00:05",
        started_at="2026-03-01 09:00:00",
        description="drained by l3ha",
    )
    data["configurations"]["agent_mode"] = "dvr_snat"
    agent = translate.agent_from_dict(data)
    assert agent.id == "a1"
    assert agent.host == "net-1"
    assert agent.availability_zone == "az2"
    assert agent.mode is AgentMode.DVR_SNAT
    assert agent.alive is False
    assert agent.admin_state_up is False
    assert agent.heartbeat_timestamp == "2026-03-01 10:00:05"
    assert agent.started_at == "2026-03-01 09:00:00"
    assert agent.description == "drained by l3ha"


@pytest.mark.parametrize(
    ("configurations", "mode"),
    [
        ({"agent_mode": "dvr"}, AgentMode.DVR),
        ({"agent_mode": "dvr_no_external"}, AgentMode.DVR_NO_EXTERNAL),
        ({}, AgentMode.LEGACY),
        (None, AgentMode.LEGACY),
        ({"agent_mode": "something_new"}, AgentMode.LEGACY),
    ],
)
def test_agent_mode_comes_from_configurations(configurations: object, mode: AgentMode) -> None:
    assert translate.agent_mode(configurations) is mode


def test_null_availability_zone_and_description_become_empty_strings() -> None:
    agent = translate.agent_from_dict(
        l3_agent("a1", "net-1", availability_zone=None, description=None)
    )
    assert agent.availability_zone == ""
    assert agent.description == ""


def test_only_l3_agents_are_l3_agents() -> None:
    assert translate.is_l3_agent(l3_agent("a", "h"))
    assert not translate.is_l3_agent(l3_agent("a", "h", agent_type="DHCP agent"))


def test_router_dict_becomes_router_with_ha_dvr_hints_and_tags() -> None:
    data = router(
        "r1",
        "web",
        ha=True,
        distributed=True,
        availability_zone_hints=["az1", "az2"],
        tags=["l3ha:busy", "l3ha:weight=7"],
        project_id="",
        tenant_id="t9",
    )
    r = translate.router_from_dict(data)
    assert (r.id, r.name, r.ha, r.distributed) == ("r1", "web", True, True)
    assert r.availability_zone_hints == ("az1", "az2")
    assert r.tags == ("l3ha:busy", "l3ha:weight=7")
    assert r.project_id == "t9"


def test_router_without_admin_only_fields_is_legacy() -> None:
    r = translate.router_from_dict({"id": "r2"})
    assert (r.ha, r.distributed, r.tags, r.availability_zone_hints) == (False, False, (), ())


def test_hosting_agents_give_bindings_with_ha_state() -> None:
    agents = [
        {**l3_agent("a1", "net-1"), "ha_state": "active", "ha_chassis_priority": None},
        {**l3_agent("a2", "net-2"), "ha_state": "standby"},
        {**l3_agent("a3", "net-3"), "ha_state": None},
        {**l3_agent("a4", "net-4"), "ha_state": "fault"},
    ]
    bindings = translate.bindings_from_hosting_agents("r1", agents)
    assert [(b.router_id, b.agent_id, b.ha_state) for b in bindings] == [
        ("r1", "a1", HAState.ACTIVE),
        ("r1", "a2", HAState.STANDBY),
        ("r1", "a3", None),
        ("r1", "a4", HAState.UNKNOWN),
    ]


def test_agent_routers_give_bindings() -> None:
    bindings = translate.bindings_from_agent_routers("a1", [router("r1"), router("r2")])
    assert [(b.router_id, b.agent_id, b.ha_state) for b in bindings] == [
        ("r1", "a1", None),
        ("r2", "a1", None),
    ]


def test_port_dict_becomes_port_state_with_binding_host() -> None:
    port = translate.port_from_dict(
        {
            "id": "p1",
            "device_owner": "network:router_gateway",
            "status": "BUILD",
            "binding:host_id": "net-2",
            "device_id": "r1",
        }
    )
    assert (port.id, port.device_owner, port.status, port.host) == (
        "p1",
        "network:router_gateway",
        "BUILD",
        "net-2",
    )


def test_next_link_is_found_only_when_rel_next() -> None:
    body = {
        "routers": [],
        "routers_links": [
            {"rel": "previous", "href": "http://x/v2.0/routers?marker=a&page_reverse=True"},
            {"rel": "next", "href": "http://x/v2.0/routers?limit=2&marker=b"},
        ],
    }
    assert translate.next_link(body, "routers") == "http://x/v2.0/routers?limit=2&marker=b"
    assert translate.next_link({"routers": []}, "routers") is None
    assert translate.next_link({"routers_links": "junk"}, "routers") is None


@pytest.mark.parametrize(
    ("status", "kind", "error", "retryable"),
    [
        (401, "", AuthError, False),
        (403, "", AuthError, False),
        (404, "RouterNotFound", ApiNotFoundError, False),
        (404, "InvalidL3Agent", ConflictError, False),
        (409, "RouterHostedByL3Agent", ConflictError, False),
        (500, "", ServerError, True),
        (503, "", ServerError, True),
        (504, "", ApiTimeoutError, True),
        (501, "", CloudError, False),
        (400, "HTTPBadRequest", CloudError, False),
    ],
)
def test_status_becomes_error_of_the_right_kind(
    status: int, kind: str, error: type[CloudError], retryable: bool
) -> None:
    err = translate.error_for_status(status, "bind router r1", neutron_error(kind, "why\nnot"))
    assert type(err) is error
    assert err.retryable is retryable
    assert str(err).startswith(f"bind router r1: HTTP {status}")
    assert "\n" not in str(err)


def test_conflict_message_carries_neutron_type_and_message() -> None:
    body = neutron_error("RouterHostedByL3Agent", "The router r1 has been already hosted by a2.")
    err = translate.error_for_status(409, "bind", body)
    assert "RouterHostedByL3Agent: The router r1 has been already hosted by a2." in str(err)


def test_non_json_error_body_still_gives_status() -> None:
    assert str(translate.error_for_status(502, "list", None)) == "list: HTTP 502"


def test_safe_url_drops_credentials_query_and_fragment() -> None:
    url = "https://admin:s3cret@127.0.0.1:5000/v3?token=abc#x"
    assert translate.safe_url(url) == "https://127.0.0.1:5000/v3"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("...NewConnectionError(... [Errno 111] Connection refused'))", "connection refused"),
        ("NameResolutionError(... Failed to resolve 'x.invalid' ...)", "failed to resolve"),
        ("something else entirely", "something else entirely"),
    ],
)
def test_connection_reason_is_short(text: str, reason: str) -> None:
    assert translate.connection_reason(text) == reason


def test_tls_reason_is_the_ssl_code_and_text() -> None:
    text = (
        "SSL exception connecting to https://127.0.0.1:1/: HTTPSConnectionPool(...) (Caused by "
        "SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate "
        "verify failed: self-signed certificate (_ssl.c:1006)')))"
    )
    assert translate.tls_reason(text) == (
        "CERTIFICATE_VERIFY_FAILED: certificate verify failed: self-signed certificate"
    )
