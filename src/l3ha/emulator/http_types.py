"""Requests, responses and body helpers shared by the emulator's handlers. Pure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from l3ha.emulator.query import ApiError, Params, bad_request, select_fields


@dataclass
class Request:
    """One HTTP request, already parsed."""

    method: str
    path: str
    params: Params
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    base: str = "http://127.0.0.1:9696"  # scheme://host:port from the Host header


@dataclass
class Response:
    status: int
    body: Any = None  # JSON-able; ``None`` with ``has_body`` False means no body
    has_body: bool = True
    headers: dict[str, str] = field(default_factory=dict)


def ok(body: Any, status: int = 200) -> Response:
    return Response(status, body)


def no_content() -> Response:
    return Response(204, None, has_body=False)


Handler = Callable[..., "Response"]
#: One row of the API's route table: method, path pattern such as
#: ``"agents/{id}/dhcp-networks/{network}"`` (below ``/v2.0/``), and the handler, called
#: with the request and the path's ``{...}`` values in order (``None``: no such route).
Route = tuple[str, str, Handler | None]


def not_found_path() -> ApiError:
    return ApiError(404, "HTTPNotFound", "The resource could not be found.")


class Routes:
    """The route table of the whole API and its one matcher."""

    def __init__(self, rows: list[Route]) -> None:
        self.rows: dict[tuple[str, int], list[tuple[list[str], Handler]]] = {}
        for method, pattern, handler in rows:
            if handler is None:
                continue
            segments = pattern.split("/")
            self.rows.setdefault((method, len(segments)), []).append((segments, handler))

    def match(self, method: str, parts: list[str]) -> tuple[Handler, list[str]]:
        """The first row's handler for ``method`` on the path ``parts`` and the path's
        ``{...}`` values, else Neutron's 404 for an unknown path (a wrong method too)."""
        for pattern, handler in self.rows.get((method, len(parts)), []):
            pairs = list(zip(pattern, parts, strict=True))
            if all(segment == part or segment[0] == "{" for segment, part in pairs):
                return handler, [part for segment, part in pairs if segment[0] == "{"]
        raise not_found_path()


def resource_body(body: Any, key: str) -> dict[str, Any]:
    """The ``{key: {...}}`` part of a request body, or a 400."""
    if not body:
        raise bad_request("Resource body required")
    if not isinstance(body, dict) or not isinstance(body.get(key), dict):
        raise bad_request(f"Unable to find '{key}' in request body")
    inner: dict[str, Any] = body[key]
    return inner


def as_bool(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
        return value.lower() in ("true", "1")
    raise ApiError(400, "InvalidInput",
                   f"Invalid input for operation: '{value}' cannot be converted to boolean.")


def router_id_of(body: Any) -> str:
    """The ``router_id`` of a scheduler shim's POST body, else Neutron's 400."""
    if not isinstance(body, dict) or "router_id" not in body:
        raise bad_request("Failed to parse request. Required attribute 'router_id' not specified")
    return str(body["router_id"])


def only_fields(req: Request, doc: dict[str, Any]) -> dict[str, Any]:
    """A shown resource's document cut to the request's ``fields`` (all without any)."""
    return select_fields(doc, [v for k, v in req.params if k == "fields" and v])
