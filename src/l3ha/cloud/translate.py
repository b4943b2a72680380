"""Neutron API dicts and HTTP statuses turned into l3ha model objects and errors.

Pure, apart from one logged warning (an agent mode l3ha does not know).

The adapter fetches JSON through openstacksdk's authenticated session and hands
the decoded dicts here, so the mapping from the wire format (exactly as
NEUTRON.md describes it) to ``l3ha.model`` is testable without a server.
The status-to-error table lives here too; the adapter adds the SDK exception
classes around it, in one place.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from l3ha.cloud.base import PortState
from l3ha.errors import (
    ApiNotFoundError,
    ApiTimeoutError,
    AuthError,
    CloudError,
    ConflictError,
    ServerError,
)
from l3ha.model import Agent, AgentMode, Binding, HAState, Router

log = logging.getLogger(__name__)

L3_AGENT_TYPE = "L3 agent"
#: Neutron's 404 error types that mean "this agent cannot take routers" (admin down, not L3)
#: or "... networks" (admin down, not DHCP): a refusal (``ConflictError``), not a missing id.
REFUSING_AGENT_TYPES = frozenset({"InvalidL3Agent", "InvalidDHCPAgent"})

Json = Mapping[str, Any]


def agent_mode(configurations: object) -> AgentMode:
    """The agent's ``agent_mode`` (Neutron's default ``legacy`` when absent)."""
    raw = configurations.get("agent_mode") if isinstance(configurations, Mapping) else None
    if not raw:
        return AgentMode.LEGACY
    try:
        return AgentMode(str(raw))
    except ValueError:
        log.warning("unknown L3 agent_mode %r, treating it as legacy", raw)
        return AgentMode.LEGACY


def is_l3_agent(data: Json) -> bool:
    """Whether an agent dict describes an L3 agent."""
    return data.get("agent_type") == L3_AGENT_TYPE


def agent_from_dict(data: Json) -> Agent:
    """An ``Agent`` from one element of ``GET /v2.0/agents``."""
    return Agent(
        id=str(data["id"]),
        host=str(data.get("host") or ""),
        availability_zone=str(data.get("availability_zone") or ""),
        mode=agent_mode(data.get("configurations")),
        admin_state_up=bool(data.get("admin_state_up", True)),
        alive=bool(data.get("alive", False)),
        heartbeat_timestamp=str(data.get("heartbeat_timestamp") or ""),
        started_at=str(data.get("started_at") or ""),
        description=str(data.get("description") or ""),
    )


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        return ()
    return tuple(str(v) for v in value)


def router_from_dict(data: Json) -> Router:
    """A ``Router`` from one element of ``GET /v2.0/routers`` (or ``l3-routers``)."""
    return Router(
        id=str(data["id"]),
        name=str(data.get("name") or ""),
        ha=bool(data.get("ha") or False),
        distributed=bool(data.get("distributed") or False),
        availability_zone_hints=_strings(data.get("availability_zone_hints")),
        tags=_strings(data.get("tags")),
        project_id=str(data.get("project_id") or data.get("tenant_id") or ""),
        admin_state_up=bool(data.get("admin_state_up", True)),
        status=str(data.get("status") or ""),
        gateway_ips=gateway_ips(data.get("external_gateway_info")),
    )


def gateway_ips(info: object) -> tuple[str, ...]:
    """The addresses of a router's ``external_gateway_info.external_fixed_ips``."""
    if not isinstance(info, Mapping):
        return ()
    fixed = info.get("external_fixed_ips")
    if not isinstance(fixed, list):
        return ()
    return tuple(
        str(ip["ip_address"])
        for ip in fixed
        if isinstance(ip, Mapping) and isinstance(ip.get("ip_address"), str)
    )


def ha_state(value: object) -> HAState | None:
    """``ha_state`` of a hosting agent; ``None`` for non-HA routers."""
    if value is None or value == "":
        return None
    try:
        return HAState(str(value))
    except ValueError:
        return HAState.UNKNOWN


def bindings_from_hosting_agents(router_id: str, agents: Iterable[Json]) -> list[Binding]:
    """Bindings from ``GET /v2.0/routers/{R}/l3-agents`` (agents with ``ha_state``)."""
    return [
        Binding(router_id=router_id, agent_id=str(a["id"]), ha_state=ha_state(a.get("ha_state")))
        for a in agents
    ]


def bindings_from_agent_routers(agent_id: str, routers: Iterable[Json]) -> list[Binding]:
    """Bindings from ``GET /v2.0/agents/{A}/l3-routers`` (full router dicts)."""
    return [Binding(router_id=str(r["id"]), agent_id=agent_id) for r in routers]


def port_from_dict(data: Json) -> PortState:
    """A ``PortState`` from one element of ``GET /v2.0/ports``."""
    return PortState(
        id=str(data["id"]),
        device_owner=str(data.get("device_owner") or ""),
        status=str(data.get("status") or ""),
        host=str(data.get("binding:host_id") or ""),
    )


def next_link(body: Json, collection: str) -> str | None:
    """The ``rel: next`` href of a paginated collection, if the server sent one."""
    links = body.get(f"{collection}_links")
    if not isinstance(links, list):
        return None
    for link in links:
        if isinstance(link, Mapping) and link.get("rel") == "next" and link.get("href"):
            return str(link["href"])
    return None


def neutron_error(body: object) -> tuple[str, str]:
    """``(type, message)`` of a ``NeutronError`` body; empty strings when absent."""
    if not isinstance(body, Mapping):
        return "", ""
    err = body.get("NeutronError")
    if isinstance(err, Mapping):
        return str(err.get("type") or ""), one_line(str(err.get("message") or ""))
    if isinstance(err, str):  # very old servers sent a bare string
        return "", one_line(err)
    return "", ""


def one_line(text: str, limit: int = 300) -> str:
    """Collapse whitespace so an upstream message fits an operator's one-line error."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


_CONNECTION_REASONS = (
    "Connection refused",
    "Failed to resolve",
    "Name or service not known",
    "No route to host",
    "Network is unreachable",
    "Connection reset",
    "Connection aborted",
    "Remote end closed connection",
)


def connection_reason(text: str) -> str:
    """The short reason inside a urllib3/keystoneauth connection error message."""
    for reason in _CONNECTION_REASONS:
        if reason.lower() in text.lower():
            return reason.lower()
    return one_line(text, 160)


_SSL_REASON = re.compile(r"\[SSL: ([A-Z_]+)\] ([^'\"()]+)")


def tls_reason(text: str) -> str:
    """The ``[SSL: CODE] reason`` part of a TLS error message, else the message shortened."""
    match = _SSL_REASON.search(text)
    if match:
        return f"{match.group(1)}: {match.group(2).strip()}"
    return one_line(text, 160)


def safe_url(url: str) -> str:
    """``url`` without user info, query or fragment, safe to print."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable url>"
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def error_for_status(status: int, what: str, body: object = None) -> CloudError:
    """The l3ha error for an HTTP error status of a Neutron call described by ``what``."""
    kind, message = neutron_error(body)
    detail = f"{kind}: {message}" if kind and message else (message or kind)
    text = f"{what}: HTTP {status}" + (f" ({detail})" if detail else "")
    if status in (401, 403):
        return AuthError(text)
    if status == 404:
        if kind in REFUSING_AGENT_TYPES:
            return ConflictError(text)
        return ApiNotFoundError(text)
    if status == 409:
        return ConflictError(text)
    if status in (408, 504):
        return ApiTimeoutError(text)
    if status == 501:
        return CloudError(text)
    if status >= 500:
        return ServerError(text)
    return CloudError(text)
