"""A minimal Keystone v3 under ``/identity``: discovery, password tokens. I/O: random source.

``POST /identity/v3/auth/tokens`` with the configured user name and password
answers 201 with ``X-Subject-Token`` and a catalog whose ``network`` endpoint
is the emulator itself; a wrong password is 401. Tokens never expire while the
emulator runs. Requests are ``api.Request`` values, answers ``api.Response``.
No network I/O of its own (the emulator's server carries the requests), but
not pure: tokens are drawn from the system's random source (``secrets``).
"""

from __future__ import annotations

import secrets
import threading
from datetime import datetime, timedelta
from typing import Any

from l3ha.emulator.http_types import Request, Response

PREFIX = "/identity"
UNAUTHORIZED = {"error": {"code": 401, "title": "Unauthorized",
                          "message": "The request you have made requires authentication."}}
DOMAIN = {"id": "default", "name": "Default"}


def _iso(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%S.000000Z")


class Keystone:
    """Issues and checks tokens for one user and project."""

    def __init__(self, username: str, password: str, project_name: str) -> None:
        self.username = username
        self.password = password
        self.project_name = project_name
        self.user_id = "u" + secrets.token_hex(15)
        self.project_id = "p" + secrets.token_hex(15)
        self._tokens: set[str] = set()
        self._lock = threading.Lock()

    def valid(self, token: str | None) -> bool:
        with self._lock:
            return token is not None and token in self._tokens

    def handle(self, req: Request, now: datetime) -> Response:
        path = req.path.rstrip("/")
        if req.method == "GET" and path == PREFIX:
            return Response(300, {"versions": {"values": [self._version(req)]}})
        if req.method == "GET" and path == f"{PREFIX}/v3":
            return Response(200, {"version": self._version(req)})
        if req.method == "POST" and path == f"{PREFIX}/v3/auth/tokens":
            return self._issue(req, now)
        if req.method in ("GET", "HEAD") and path == f"{PREFIX}/v3/auth/tokens":
            if self.valid(req.headers.get("x-auth-token")) and self.valid(
                    req.headers.get("x-subject-token")):
                return Response(200, {"token": self._token_body(req, now)})
            return Response(401, UNAUTHORIZED)
        return Response(404, {"error": {"code": 404, "title": "Not Found",
                                        "message": "The resource could not be found."}})

    def _version(self, req: Request) -> dict[str, Any]:
        return {"id": "v3.14", "status": "stable", "updated": "2020-04-07T00:00:00Z",
                "links": [{"rel": "self", "href": f"{req.base}{PREFIX}/v3/"}],
                "media-types": [{"base": "application/json",
                                 "type": "application/vnd.openstack.identity-v3+json"}]}

    def _issue(self, req: Request, now: datetime) -> Response:
        if not self._credentials_ok(req.body):
            return Response(401, UNAUTHORIZED)
        token = secrets.token_hex(32)
        with self._lock:
            self._tokens.add(token)
        return Response(201, {"token": self._token_body(req, now)},
                        headers={"X-Subject-Token": token})

    def _credentials_ok(self, body: Any) -> bool:
        try:
            identity = body["auth"]["identity"]
            user = identity["password"]["user"]
        except (KeyError, TypeError):
            return False
        return bool(user.get("name") == self.username and user.get("password") == self.password)

    def _token_body(self, req: Request, now: datetime) -> dict[str, Any]:
        endpoint = {"id": "e" + secrets.token_hex(8), "interface": "public",
                    "region": "RegionOne", "region_id": "RegionOne", "url": f"{req.base}/"}
        identity = dict(endpoint, url=f"{req.base}{PREFIX}/v3/",
                        id="e" + secrets.token_hex(8))
        return {
            "methods": ["password"],
            "user": {"id": self.user_id, "name": self.username, "domain": DOMAIN,
                     "password_expires_at": None},
            "project": {"id": self.project_id, "name": self.project_name, "domain": DOMAIN},
            "roles": [{"id": "r-admin", "name": "admin"}, {"id": "r-member", "name": "member"}],
            "is_domain": False,
            "audit_ids": [secrets.token_hex(8)],
            "issued_at": _iso(now),
            "expires_at": _iso(now + timedelta(days=1)),
            "catalog": [
                {"type": "network", "name": "neutron", "id": "s-network",
                 "endpoints": [endpoint]},
                {"type": "identity", "name": "keystone", "id": "s-identity",
                 "endpoints": [identity]},
            ],
        }
