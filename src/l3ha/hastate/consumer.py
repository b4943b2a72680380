"""Consumer of a monitor's unix socket: applies only increasing sequence numbers. I/O: unix sockets.

``SocketWatcher.transitions()`` yields each new transition once, in order. When
the socket goes away (monitor restarting) it reconnects, at most ``retries``
failed attempts in a row, ``retry_interval`` seconds apart; a reconnect first
delivers the monitor's current state, which is dropped if it is not newer than
what was already applied. Sequence numbers are compared within one monitor
run: a transition from a new run (the monitor restarted, maybe numbering from
1 again) resets the filter and is reported to ``on_new_run``.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from l3ha.clock import Clock, SystemClock
from l3ha.errors import BadInputError, L3haError
from l3ha.hastate.server import UnixPath
from l3ha.hastate.vipstate import SequenceFilter, Transition


class SocketGoneError(L3haError):
    """The monitor's socket could not be reached within the allowed reconnects."""

    exit_code = 1


@dataclass(frozen=True)
class Received:
    """One applied transition and the whole document it came in."""

    transition: Transition
    document: dict[str, Any]


def parse_line(line: bytes) -> Received:
    """Decode one JSON line from a monitor."""
    try:
        document = json.loads(line)
    except json.JSONDecodeError as exc:
        raise BadInputError(f"monitor sent a line that is not JSON: {line[:80]!r}") from exc
    if not isinstance(document, dict):
        raise BadInputError(f"monitor sent a line that is not an object: {line[:80]!r}")
    return Received(Transition.from_dict(document), document)


class SocketWatcher:
    """Follows one monitor socket across reconnects."""

    def __init__(
        self,
        path: Path,
        retries: int = 10,
        retry_interval: float = 0.5,
        clock: Clock | None = None,
        on_new_run: Callable[[str, Transition], None] | None = None,
    ) -> None:
        if retries < 0 or retry_interval < 0:
            raise BadInputError("retries and retry interval must not be negative")
        self.path = path
        self.retries = retries
        self.retry_interval = retry_interval
        self.clock = clock or SystemClock()
        self.filter = SequenceFilter()
        self.on_new_run = on_new_run
        self.connections = 0
        self.dropped = 0

    def _connect(self) -> socket.socket:
        failures = 0
        while True:
            address = UnixPath(self.path)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(address.address)
            except OSError as exc:
                sock.close()
                failures += 1
                if failures > self.retries:
                    raise SocketGoneError(
                        f"cannot connect to {self.path} after {failures} attempts: {exc.strerror}"
                    ) from exc
                self.clock.sleep(self.retry_interval)
                continue
            finally:
                address.close()
            self.connections += 1
            return sock

    def transitions(self) -> Iterator[Received]:
        """Every newer transition, in order, until the socket is gone for good."""
        while True:
            sock = self._connect()
            try:
                yield from self._read(sock)
            finally:
                sock.close()

    def _read(self, sock: socket.socket) -> Iterator[Received]:
        buffer = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                received = parse_line(line)
                if self._accept(received.transition):
                    yield received
                else:
                    self.dropped += 1

    def _accept(self, transition: Transition) -> bool:
        old_run, resets = self.filter.run, self.filter.resets
        accepted = self.filter.accept(transition)
        if self.filter.resets != resets and self.on_new_run is not None:
            self.on_new_run(old_run, transition)
        return accepted
