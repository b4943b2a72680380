"""Unix socket that streams transitions as JSON lines, in order. I/O: unix sockets, a thread.

A new connection first gets the current state, then every later transition.
Registering a client and publishing hold the same lock, so no client ever sees
an older transition after a newer one. Publishing never blocks: each client
has a bounded output buffer, sends are non-blocking, and one I/O thread
flushes what the socket could not take at once. A client whose buffer would
exceed ``MAX_PENDING_BYTES`` (it stopped reading) is disconnected; it
reconnects and first gets the current state. So a stuck client can never stall
the monitor.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import socket
import threading
from pathlib import Path
from typing import Any

from l3ha.errors import BadInputError, UserError

LOG = logging.getLogger(__name__)
MAX_PENDING_BYTES = 1024 * 1024
IO_POLL_SECONDS = 1.0
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


class _Client:
    """One connected consumer and the bytes not yet sent to it."""

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.sock = sock
        self.fd = sock.fileno()
        self.pending = bytearray()

    def queue(self, line: bytes, limit: int) -> bool:
        """Add ``line`` and send what the socket takes now; False when the client must go."""
        if len(self.pending) + len(line) > limit:
            LOG.info("dropping socket client: %d bytes unread", len(self.pending))
            return False
        self.pending += line
        return self.flush()

    def flush(self) -> bool:
        """Send as much as the socket takes without blocking; False on a broken connection."""
        while self.pending:
            try:
                sent = self.sock.send(self.pending)
            except (BlockingIOError, InterruptedError):
                return True
            except OSError as exc:
                LOG.info("dropping socket client: %s", exc)
                return False
            del self.pending[:sent]
        return True

    def hung_up(self) -> bool:
        """Whether the peer closed (consumers never send; anything they do send is discarded)."""
        try:
            data = self.sock.recv(4096)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return True
        return not data


class TransitionServer:
    """Listens on a unix socket and fans transitions out to every connected client."""

    def __init__(self, path: Path, max_pending: int = MAX_PENDING_BYTES) -> None:
        self.path = path
        self.max_pending = max_pending
        self._address = UnixPath(path)
        self._listener: socket.socket | None = None
        self._clients: list[_Client] = []
        self._current: bytes | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closing = threading.Event()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self.dropped = 0

    def start(self) -> None:
        """Bind (replacing a stale socket file, refusing a live one) and start serving."""
        self._remove_stale()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(self._address.address)
        except OSError as exc:
            listener.close()
            raise BadInputError(f"cannot listen on {self.path}: {exc.strerror}") from exc
        listener.listen(16)
        listener.setblocking(False)
        self._listener = listener
        self._thread = threading.Thread(target=self._io_loop, name="socket-io", daemon=True)
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

    def _io_loop(self) -> None:
        """Accept clients, flush buffers the sockets could not take at once, notice hang-ups."""
        assert self._listener is not None
        listener = self._listener
        while not self._closing.is_set():
            with self._lock:
                clients = list(self._clients)
            writers = [c.fd for c in clients if c.pending]
            readers = [listener.fileno(), self._wake_r, *(c.fd for c in clients)]
            try:
                readable, writable, _ = select.select(readers, writers, [], IO_POLL_SECONDS)
            except (OSError, ValueError):  # a socket closed under us: look again
                continue
            if self._wake_r in readable:
                with contextlib.suppress(OSError):
                    os.read(self._wake_r, 4096)
            if listener.fileno() in readable:
                self._accept(listener)
            self._service(clients, set(readable), set(writable))

    def _accept(self, listener: socket.socket) -> None:
        try:
            sock, _ = listener.accept()
        except OSError:
            return
        client = _Client(sock)
        with self._lock:
            if self._current is not None and not client.queue(self._current, self.max_pending):
                self._drop(client)
                return
            self._clients.append(client)

    def _service(self, clients: list[_Client], readable: set[int], writable: set[int]) -> None:
        with self._lock:
            for client in clients:
                if client not in self._clients:
                    continue
                gone = client.fd in readable and client.hung_up()
                if gone or (client.fd in writable and not client.flush()):
                    self._clients.remove(client)
                    self._drop(client)

    def _drop(self, client: _Client) -> None:
        self.dropped += 1
        client.sock.close()

    def _wake(self) -> None:
        if self._wake_w < 0:
            return
        with contextlib.suppress(OSError):  # full pipe: the loop is awake anyway
            os.write(self._wake_w, b"x")

    def publish(self, document: dict[str, Any]) -> None:
        """Queue one transition for every client (never blocks); remember it as current."""
        line = (json.dumps(document, sort_keys=True) + "\n").encode()
        waiting = False
        with self._lock:
            self._current = line
            kept = []
            for client in self._clients:
                if client.queue(line, self.max_pending):
                    kept.append(client)
                    waiting = waiting or bool(client.pending)
                else:
                    self._drop(client)
            self._clients = kept
        if waiting:
            self._wake()

    @property
    def client_count(self) -> int:
        with self._lock:
            return len(self._clients)

    def close(self) -> None:
        """Stop serving, disconnect clients, remove the socket file."""
        self._closing.set()
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self._listener is not None:
            self._listener.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        with self._lock:
            for client in self._clients:
                client.sock.close()
            self._clients = []
        self._address.close()
        fds, (self._wake_r, self._wake_w) = (self._wake_r, self._wake_w), (-1, -1)
        for fd in fds:
            if fd >= 0:
                os.close(fd)
