"""Fixtures of the daemon tests: a real etcd on loopback (skipped only without the binary)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.daemon.etcd_server import EtcdServer, etcd_binary, start_etcd


def _binary_or_skip() -> str:
    binary = etcd_binary()
    if binary is None:
        pytest.skip("etcd binary not installed (Debian package etcd-server; 'make system-deps')")
    return binary


@pytest.fixture(scope="module")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdServer]:
    """One etcd shared by a test module; tests use distinct lock names."""
    server = start_etcd(_binary_or_skip(), tmp_path_factory.mktemp("etcd"))
    yield server
    server.stop()


@pytest.fixture
def etcd_factory(tmp_path: Path) -> Iterator[Callable[[], EtcdServer]]:
    """Start private etcd servers (a test may kill them); all are killed at teardown."""
    binary = _binary_or_skip()
    started: list[EtcdServer] = []

    def start() -> EtcdServer:
        data_dir = tmp_path / f"etcd{len(started)}"
        data_dir.mkdir()
        server = start_etcd(binary, data_dir)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
