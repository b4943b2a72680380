"""TCP listeners standing for routers' gateway addresses on loopback. I/O: sockets, one thread.

Router number ``n`` (1-based) of the chosen subset gets the address
``127.A.(n >> 8).(n & 255)`` in the configured ``127.A.B.0/16`` block (all of
127/8 is local on Linux, no address setup needed); the emulator shows it as the
router's gateway address. Every listener binds the same TCP port: the configured
one, or (0) a free port the kernel picks for the first address at start. A
listener is open (accepting, then closing each connection) exactly while the
router forwards and closed (connection refused) otherwise, so a TCP connect to
``gateway_ip:port`` tells whether the router forwards.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading


class Listeners:
    """Open/close loopback listeners on demand; one selector thread accepts connections."""

    def __init__(self, first_octet: int = 42, port: int = 0) -> None:
        self._first_octet = first_octet
        self.port = port
        self._addresses: dict[str, str] = {}
        self._open: dict[str, socket.socket] = {}
        self._lock = threading.Lock()
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._stopping = False
        self._thread: threading.Thread | None = None

    def assign(self, router_id: str, number: int) -> None:
        """Give ``router_id`` the listener address of router number ``number`` (1-based)."""
        self._addresses[router_id] = f"127.{self._first_octet}.{(number >> 8) & 255}.{number & 255}"

    def ip(self, router_id: str) -> str | None:
        return self._addresses.get(router_id)

    def address(self, router_id: str) -> str | None:
        """``"127.x.y.z:port"``, or None for routers without a listener."""
        found = self._addresses.get(router_id)
        return None if found is None else f"{found}:{self.port}"

    def start(self) -> None:
        """Pick the shared port (when none is configured) and start accepting."""
        if self.port == 0 and self._addresses:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                probe.bind((next(iter(self._addresses.values())), 0))
                self.port = probe.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, name="emulator-listeners",
                                        daemon=True)
        self._thread.start()

    def set_open(self, router_id: str, want_open: bool) -> None:
        """Open or close the router's listener (no-op for routers without one)."""
        if router_id not in self._addresses:
            return
        with self._lock:
            if want_open and router_id not in self._open:
                self._open[router_id] = self._bind(router_id)
                self._selector.register(self._open[router_id], selectors.EVENT_READ, router_id)
            elif not want_open and router_id in self._open:
                sock = self._open.pop(router_id)
                self._selector.unregister(sock)
                sock.close()
        self._wake()

    def _bind(self, router_id: str) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self._addresses[router_id], self.port))
        sock.listen(64)
        sock.setblocking(False)
        return sock

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    def _serve(self) -> None:
        while not self._stopping:
            for key, _ in self._selector.select(timeout=0.5):
                if key.data is None:
                    with contextlib.suppress(OSError):
                        self._wake_r.recv(4096)
                    continue
                self._accept(key.fileobj)  # type: ignore[arg-type]

    def _accept(self, sock: socket.socket) -> None:
        with self._lock:
            if sock.fileno() < 0:
                return
            try:
                conn, _ = sock.accept()
            except OSError:
                return
        conn.close()

    def stop(self) -> None:
        self._stopping = True
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout=2)
        with self._lock:
            for sock in self._open.values():
                with contextlib.suppress(KeyError, ValueError):
                    self._selector.unregister(sock)
                sock.close()
            self._open.clear()
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()
