"""Raw HTTP calls for the contract suite's wire-level checks; performs HTTP on loopback.

The SDK hides status codes and bodies (it swallows 404s and 409s on the scheduler
calls), so the rows of NEUTRON.md about exact codes and bodies are checked with the
standard library instead.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Reply:
    """One HTTP answer: status, raw body text, and headers."""

    status: int
    text: str
    headers: dict[str, str]

    def json(self) -> Any:
        return json.loads(self.text)

    def error_type(self) -> str:
        """The ``type`` of a ``{"NeutronError": {...}}`` body."""
        return str(self.json()["NeutronError"]["type"])


def call(
    url: str,
    method: str = "GET",
    body: Any = None,
    headers: dict[str, str] | None = None,
    timeout: float = TIMEOUT_S,
) -> Reply:
    """Send one request; HTTP errors are answers, not exceptions."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Accept", "application/json")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return Reply(response.status, response.read().decode(), dict(response.headers))
    except urllib.error.HTTPError as error:
        return Reply(error.code, error.read().decode(), dict(error.headers))


class Api:
    """Requests against one backend's root URL (``http://127.0.0.1:PORT/``)."""

    def __init__(self, root_url: str) -> None:
        self.root = root_url.rstrip("/")

    def get(self, path: str, **kwargs: Any) -> Reply:
        return call(self.root + path, "GET", **kwargs)

    def post(self, path: str, body: Any = None, **kwargs: Any) -> Reply:
        return call(self.root + path, "POST", body, **kwargs)

    def put(self, path: str, body: Any = None, **kwargs: Any) -> Reply:
        return call(self.root + path, "PUT", body, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> Reply:
        return call(self.root + path, "DELETE", **kwargs)

    def create_router(self, name: str, ha: bool = False, distributed: bool = False) -> str:
        """POST /v2.0/routers; returns the new router's id."""
        reply = self.post(
            "/v2.0/routers", {"router": {"name": name, "ha": ha, "distributed": distributed}}
        )
        if reply.status != 201:
            raise AssertionError(f"creating router {name}: {reply.status} {reply.text}")
        return str(reply.json()["router"]["id"])

    def bind(self, agent_id: str, router_id: str) -> Reply:
        return self.post(f"/v2.0/agents/{agent_id}/l3-routers", {"router_id": router_id})

    def unbind(self, agent_id: str, router_id: str) -> Reply:
        return self.delete(f"/v2.0/agents/{agent_id}/l3-routers/{router_id}")

    def hosting_agent_ids(self, router_id: str) -> set[str]:
        reply = self.get(f"/v2.0/routers/{router_id}/l3-agents")
        if reply.status != 200:
            raise AssertionError(f"l3-agents of {router_id}: {reply.status} {reply.text}")
        return {agent["id"] for agent in reply.json()["agents"]}

    def agent(self, agent_id: str) -> dict[str, Any]:
        reply = self.get(f"/v2.0/agents/{agent_id}")
        if reply.status != 200:
            raise AssertionError(f"agent {agent_id}: {reply.status} {reply.text}")
        return dict(reply.json()["agent"])
