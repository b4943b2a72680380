"""Requests, responses and body helpers shared by the emulator's handlers. Pure."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

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
Key = TypeVar("Key")


def not_found_path() -> ApiError:
    return ApiError(404, "HTTPNotFound", "The resource could not be found.")


def pick(table: Mapping[Key, Handler], key: Key) -> Handler:
    """The handler ``table`` holds for ``key``, else Neutron's 404 for an unknown path."""
    handler = table.get(key)
    if handler is None:
        raise not_found_path()
    return handler


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
