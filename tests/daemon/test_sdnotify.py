"""systemd notify over real unix datagram sockets (path and abstract)."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from l3ha.daemon.sdnotify import Notifier


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    path = str(tmp_path / "notify")
    sock.bind(path)
    sock.settimeout(2)
    yield sock, path
    sock.close()


def received(sock: socket.socket) -> str:
    return sock.recv(4096).decode()


def test_every_message_reaches_a_path_socket(listener: tuple[socket.socket, str]) -> None:
    sock, path = listener
    notifier = Notifier({"NOTIFY_SOCKET": path})
    assert notifier.enabled
    assert notifier.ready("observed 5 agents")
    assert received(sock) == "READY=1\nSTATUS=observed 5 agents"
    assert notifier.watchdog()
    assert received(sock) == "WATCHDOG=1"
    assert notifier.stopping()
    assert received(sock) == "STOPPING=1"


def test_abstract_socket_names_start_with_at() -> None:
    name = f"l3ha-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(b"\0" + name.encode())
        sock.settimeout(2)
        assert Notifier({"NOTIFY_SOCKET": "@" + name}).ready()
        assert received(sock) == "READY=1"


def test_unset_socket_is_a_no_op() -> None:
    notifier = Notifier({})
    assert not notifier.enabled
    assert notifier.ready() is False and notifier.watchdog() is False


def test_a_vanished_manager_is_logged_not_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    notifier = Notifier({"NOTIFY_SOCKET": str(tmp_path / "nobody")})
    assert notifier.watchdog() is False
    assert notifier.watchdog() is False
    assert len([r for r in caplog.records if "cannot notify systemd" in r.message]) == 1
