"""An HTTP proxy on loopback that makes every request a given project's and roles'.

I/O: listens on 127.0.0.1, forwards to the real Neutron server on loopback.

The real server runs with ``auth_strategy = noauth``: there, Neutron builds the
request context from the ``X-Project-Id``, ``X-User-Id`` and ``X-Roles`` headers
(``neutron.auth.NoauthFakeProjectId`` and oslo.context's ``from_environ``), and
elevates a request to admin only when it names no project. openstacksdk with
``auth_type: none`` sends none of them, so l3ha, pointed at this proxy, is seen
by Neutron as exactly the user the proxy says, with exactly those roles — what
keystonemiddleware would tell Neutron about a token of that user.
"""

from __future__ import annotations

import http.client
import http.server
import threading
import urllib.parse
from collections.abc import Sequence

IDENTITY_HEADERS = ("x-project-id", "x-tenant-id", "x-user-id", "x-roles", "x-auth-token")
HOP_HEADERS = ("connection", "keep-alive", "transfer-encoding", "content-length")


class RoleProxy:
    """``url`` forwards to ``upstream`` as project ``project_id`` with ``roles``."""

    def __init__(self, upstream: str, project_id: str, roles: Sequence[str]) -> None:
        target = urllib.parse.urlsplit(upstream)
        identity = {
            "X-Project-Id": project_id,
            "X-User-Id": f"user-of-{project_id}",
            "X-Roles": ",".join(roles),
            "X-Auth-Token": "notused",
        }
        self._server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), _handler(target.hostname or "127.0.0.1", target.port or 80, identity)
        )
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> RoleProxy:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


def _handler(
    host: str, port: int, identity: dict[str, str]
) -> type[http.server.BaseHTTPRequestHandler]:
    class Forward(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {
                name: value
                for name, value in self.headers.items()
                if name.lower() not in IDENTITY_HEADERS + HOP_HEADERS
            }
            headers.update(identity)  # Host is kept: Neutron's links then point here
            upstream = http.client.HTTPConnection(host, port, timeout=60)
            try:
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                data = answer.read()
            finally:
                upstream.close()
            self.send_response(answer.status)
            for name, value in answer.getheaders():
                if name.lower() not in HOP_HEADERS:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._forward()

        def do_POST(self) -> None:
            self._forward()

        def do_PUT(self) -> None:
            self._forward()

        def do_DELETE(self) -> None:
            self._forward()

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: the Neutron server logs every request already."""

    return Forward
