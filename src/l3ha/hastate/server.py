"""Unix socket that streams transitions as JSON lines, in order. I/O: unix sockets, a thread.

A new connection first gets the current state, then every later transition.
Registering a client and publishing hold the same lock, so no client ever sees
an older transition after a newer one. A client that does not read for
``SEND_TIMEOUT`` seconds is dropped (it reconnects and gets the current state).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
from pathlib import Path
from typing import Any

from l3ha.errors import BadInputError, UserError

LOG = logging.getLogger(__name__)
SEND_TIMEOUT = 1.0
MAX_UNIX_PATH = 100


class UnixPath:
    """A socket path usable with bind/connect even when longer than the 108-byte limit.

    Long paths are reached through ``/proc/self/fd/N/NAME`` with ``N`` an open
    descriptor of the directory, kept open until ``close``.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._dir_fd: int | None = None
        text = str(path)
        if len(text.encode()) > MAX_UNIX_PATH:
            try:
                self._dir_fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
            except OSError as exc:
                raise BadInputError(f"cannot use socket path {path}: {exc.strerror}") from exc
            text = f"/proc/self/fd/{self._dir_fd}/{path.name}"
        self.address = text

    def close(self) -> None:
        if self._dir_fd is not None:
            os.close(self._dir_fd)
            self._dir_fd = None


def encode_line(document: dict[str, Any]) -> bytes:
    """One JSON line."""
    return (json.dumps(document, sort_keys=True) + "\n").encode()


class TransitionServer:
    """Listens on a unix socket and fans transitions out to every connected client."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._address = UnixPath(path)
        self._listener: socket.socket | None = None
        self._clients: list[socket.socket] = []
        self._current: bytes | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closing = threading.Event()

    def start(self) -> None:
        """Bind (replacing a stale socket file, refusing a live one) and start accepting."""
        self._remove_stale()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(self._address.address)
        except OSError as exc:
            listener.close()
            raise BadInputError(f"cannot listen on {self.path}: {exc.strerror}") from exc
        listener.listen(16)
        self._listener = listener
        self._thread = threading.Thread(target=self._accept_loop, name="socket-accept", daemon=True)
        self._thread.start()

    def _remove_stale(self) -> None:
        if not os.path.lexists(self.path):
            return
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(self._address.address)
        except OSError:
            os.unlink(self.path)
            return
        finally:
            probe.close()
        raise UserError(f"socket {self.path} is in use by another process")

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._closing.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            client.settimeout(SEND_TIMEOUT)
            with self._lock:
                if self._current is not None and not self._send(client, self._current):
                    continue
                self._clients.append(client)

    def _send(self, client: socket.socket, line: bytes) -> bool:
        try:
            client.sendall(line)
        except OSError as exc:
            LOG.info("dropping socket client: %s", exc)
            client.close()
            return False
        return True

    def publish(self, document: dict[str, Any]) -> None:
        """Send one transition to every client and remember it as the current state."""
        line = encode_line(document)
        with self._lock:
            self._current = line
            self._clients = [c for c in self._clients if self._send(c, line)]

    @property
    def client_count(self) -> int:
        with self._lock:
            return len(self._clients)

    def close(self) -> None:
        """Stop accepting, disconnect clients, remove the socket file."""
        self._closing.set()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        if self._thread is not None:
            self._thread.join(timeout=2)
        with self._lock:
            for client in self._clients:
                client.close()
            self._clients = []
        self._address.close()
