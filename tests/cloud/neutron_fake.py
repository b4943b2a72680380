"""A canned-answer HTTP server on 127.0.0.1 standing in for Neutron/Keystone edges. I/O: a socket.

Not an emulator: each test sets the exact status and body a path answers
with (``answer``), and reads back what the client sent (``requests``). The
version document at ``/`` is served by default, like Neutron's, so
openstacksdk's discovery succeeds unless a test overrides it. It exists to
drive the adapter into the error paths the emulator is not for (401, 503,
409 bodies, broken discovery, slow answers).
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit


@dataclass
class Answer:
    """What one (method, path) answers with."""

    status: int = 200
    body: Any = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None


@dataclass
class Seen:
    """One request as the server received it."""

    method: str
    path: str
    query: list[tuple[str, str]]
    body: Any
    headers: dict[str, str]


class FakeNeutron:
    """Serve canned answers; unknown paths answer 404 with a NeutronError body."""

    def __init__(self, tls: tuple[Path, Path] | None = None) -> None:
        self.answers: dict[tuple[str, str], Answer] = {}
        self.requests: list[Seen] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self.scheme = "http"
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(tls[0]), str(tls[1]))
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
            self.scheme = "https"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self._server.server_address[1]}/"

    def start(self) -> FakeNeutron:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(
        self, method: str, path: str, status: int = 200, body: Any = None, **kw: Any
    ) -> None:
        """Make ``METHOD path`` (no query) answer ``status`` with JSON ``body``."""
        self.answers[(method, path)] = Answer(status=status, body=body, **kw)

    def seen(self, method: str, path: str) -> list[Seen]:
        with self._lock:
            return [r for r in self.requests if r.method == method and r.path == path]

    def write_clouds_yaml(self, path: Path, name: str = "fake") -> Path:
        """A noauth clouds.yaml entry pointing at this server."""
        path.write_text(
            f"clouds:\n  {name}:\n    auth_type: none\n    network_endpoint_override: {self.url}\n",
            encoding="utf-8",
        )
        return path

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out as separate writes

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                seen = Seen(
                    self.command, parts.path, parse_qsl(parts.query), body, dict(self.headers)
                )
                with fake._lock:
                    fake.requests.append(seen)
                answer = fake.answers.get((self.command, parts.path)) or self._default(parts.path)
                with fake._lock:
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                time.sleep(answer.delay)
                with fake._lock:
                    fake.in_flight -= 1
                data = answer.raw if answer.raw is not None else json.dumps(answer.body).encode()
                if answer.status == 204:
                    data = b""
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in answer.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _default(self, path: str) -> Answer:
                if path == "/":
                    host = self.headers.get("Host", "127.0.0.1")
                    link = {"rel": "self", "href": f"http://{host}/v2.0/"}
                    version = {"id": "v2.0", "status": "CURRENT", "links": [link]}
                    return Answer(body={"versions": [version]})
                error = {"type": "HTTPNotFound", "message": f"no fake for {path}", "detail": ""}
                return Answer(status=404, body={"NeutronError": error})

            do_GET = do_POST = do_PUT = do_DELETE = _serve  # noqa: N815 (http.server API)

        return Handler


def self_signed_cert(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, written to ``directory``."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def closed_port() -> int:
    """A loopback port nobody listens on (bound then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def l3_agent(agent_id: str, host: str, **extra: Any) -> dict[str, Any]:
    """An L3 agent dict shaped as NEUTRON.md says."""
    data: dict[str, Any] = {
        "id": agent_id,
        "agent_type": "L3 agent",
        "binary": "neutron-l3-agent",
        "host": host,
        "topic": "l3_agent",
        "admin_state_up": True,
        "alive": True,
        "availability_zone": "az1",
        "heartbeat_timestamp": "2026-01-01 00:00:00",
        "created_at": "2025-12-31 00:00:00",
        "started_at": "2025-12-31 00:00:00",
        "description": "",
        "resources_synced": None,
        "configurations": {
            "agent_mode": "legacy",
            "handle_internal_only_routers": True,
            "interface_driver": "openvswitch",
            "log_agent_heartbeats": False,
            "extensions": [],
            "routers": 0,
            "ex_gw_ports": 0,
            "interfaces": 0,
            "floating_ips": 0,
        },
    }
    data.update(extra)
    return data


def router(router_id: str, name: str = "", **extra: Any) -> dict[str, Any]:
    """A router dict shaped as NEUTRON.md says."""
    data: dict[str, Any] = {
        "id": router_id,
        "name": name,
        "description": "",
        "project_id": "p1",
        "tenant_id": "p1",
        "admin_state_up": True,
        "status": "ACTIVE",
        "external_gateway_info": None,
        "routes": [],
        "ha": False,
        "distributed": False,
        "availability_zone_hints": [],
        "availability_zones": [],
        "flavor_id": None,
        "revision_number": 1,
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
        "tags": [],
    }
    data.update(extra)
    return data


def neutron_error(kind: str, message: str) -> dict[str, Any]:
    """A ``NeutronError`` body."""
    return {"NeutronError": {"type": kind, "message": message, "detail": ""}}
