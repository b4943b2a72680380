"""A counting, delaying HTTP proxy for benchmarks. I/O: listens on 127.0.0.1, forwards to one URL.

``CountingProxy(upstream).start()`` forwards every request to ``upstream``
(the emulator), optionally after ``delay`` seconds (a slow Neutron), and
counts requests by method and path shape (ids replaced by ``{id}``), so a
benchmark can say how many API calls of each kind an operation made. An
upstream that resets or refuses the connection is answered 502 (and counted
as ``upstream failed``), as a real proxy would; the client then retries. Used by
the benchmarks only; never by l3ha.
"""

from __future__ import annotations

import re
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


def shape(method: str, path: str) -> str:
    """``GET /v2.0/agents/{id}/l3-routers`` from a concrete request (query dropped)."""
    return f"{method} {_ID.sub('{id}', path.split('?', 1)[0])}"


class CountingProxy:
    """See the module docstring. ``counts()`` / ``reset()`` are thread-safe."""

    def __init__(self, upstream: str, delay: float = 0.0) -> None:
        self.upstream = upstream.rstrip("/")
        self.delay = delay
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    def start(self) -> CountingProxy:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def counts(self) -> Counter[str]:
        with self._lock:
            return Counter(self._counts)

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()

    def _count(self, key: str) -> None:
        with self._lock:
            self._counts[key] += 1

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args: object) -> None:
                return

            def _forward(self) -> None:
                if not self.path.startswith("/_emulator/"):
                    proxy._count(shape(self.command, self.path))
                if proxy.delay:
                    time.sleep(proxy.delay)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                request = urllib.request.Request(
                    proxy.upstream + self.path, data=body, headers=headers, method=self.command
                )
                try:
                    with urllib.request.urlopen(request, timeout=300) as answer:
                        self._reply(answer.status, dict(answer.headers), answer.read())
                except urllib.error.HTTPError as err:
                    self._reply(err.code, dict(err.headers), err.read())
                except OSError as err:  # upstream reset or refused: a gateway error, as a proxy
                    proxy._count("upstream failed")
                    body = f'{{"error": "upstream: {type(err).__name__}"}}'.encode()
                    self._reply(502, {"Content-Type": "application/json"}, body)

            def _reply(self, status: int, headers: dict[str, str], payload: bytes) -> None:
                self.send_response(status)
                for key, value in headers.items():
                    if key.lower() not in _HOP_BY_HOP:
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = _forward  # noqa: N815

        return Handler
