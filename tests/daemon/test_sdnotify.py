"""systemd notify over real unix datagram sockets (path and abstract)."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from l3ha.daemon import sdnotify
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
    assert notifier.status("leader\nhalted: az_outage")
    assert received(sock) == "STATUS=leader halted: az_outage"
    assert notifier.reloading()
    assert received(sock) == "RELOADING=1"
    assert notifier.stopping()
    assert received(sock) == "STOPPING=1"


def test_abstract_socket_names_start_with_at() -> None:
    name = f"l3ha-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(b"\0" + name.encode())
        sock.settimeout(2)
        assert Notifier({"NOTIFY_SOCKET": "@" + name}).ready()
        assert received(sock) == "READY=1"


def test_module_functions_read_the_environment_at_call_time(
    listener: tuple[socket.socket, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sock, path = listener
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    assert sdnotify.watchdog()
    assert received(sock) == "WATCHDOG=1"
    monkeypatch.delenv("NOTIFY_SOCKET")
    assert sdnotify.ready() is False


def test_unset_socket_is_a_no_op() -> None:
    notifier = Notifier({})
    assert not notifier.enabled
    assert notifier.ready() is False and notifier.watchdog() is False
    assert notifier.watchdog_interval() is None


def test_a_vanished_manager_is_logged_not_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    notifier = Notifier({"NOTIFY_SOCKET": str(tmp_path / "nobody")})
    assert notifier.watchdog() is False
    assert notifier.watchdog() is False
    assert len([r for r in caplog.records if "cannot notify systemd" in r.message]) == 1


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"WATCHDOG_USEC": "60000000"}, 30.0),
        ({"WATCHDOG_USEC": "60000000", "WATCHDOG_PID": str(os.getpid())}, 30.0),
        ({"WATCHDOG_USEC": "60000000", "WATCHDOG_PID": str(os.getpid() + 1)}, None),
        ({"WATCHDOG_USEC": "0"}, None),
        ({"WATCHDOG_USEC": "soon"}, None),
        ({}, None),
    ],
)
def test_watchdog_interval_is_half_of_watchdog_usec(
    environ: dict[str, str], expected: float | None
) -> None:
    assert Notifier(environ).watchdog_interval() == expected
