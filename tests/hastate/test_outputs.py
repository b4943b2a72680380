"""State file, socket server and consumer without root: atomic, never backwards, in order."""

from __future__ import annotations

import socket
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from l3ha.clock import ManualClock
from l3ha.errors import UserError
from l3ha.hastate.consumer import Received, SocketGoneError, SocketWatcher
from l3ha.hastate.server import TransitionServer
from l3ha.hastate.statefile import StateFile, read_transition
from l3ha.hastate.vipstate import Transition, VipState

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def tr(seq: int, state: VipState = VipState.MASTER) -> Transition:
    return Transition(seq, state, None, float(seq), T0)


class TestStateFile:
    def test_write_then_read_back(self, tmp_path: Path) -> None:
        sf = StateFile(tmp_path / "s.json", {"vip": "169.254.0.1/24"})
        assert sf.open() == 0
        assert sf.write(tr(1, VipState.BACKUP))
        assert read_transition(tmp_path / "s.json") == tr(1, VipState.BACKUP)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json", "s.json.lock"]
        sf.close()

    def test_never_backwards(self, tmp_path: Path) -> None:
        sf = StateFile(tmp_path / "s.json", {})
        sf.open()
        assert sf.write(tr(5))
        assert not sf.write(tr(4, VipState.BACKUP))
        assert not sf.write(tr(5, VipState.BACKUP))
        found = read_transition(tmp_path / "s.json")
        assert found is not None and (found.seq, found.state) == (5, VipState.MASTER)
        sf.close()

    def test_reopen_continues_from_disk(self, tmp_path: Path) -> None:
        sf = StateFile(tmp_path / "s.json", {})
        sf.open()
        sf.write(tr(9))
        sf.close()
        again = StateFile(tmp_path / "s.json", {})
        assert again.open() == 9
        assert not again.write(tr(3))
        again.close()

    def test_second_writer_is_refused(self, tmp_path: Path) -> None:
        first = StateFile(tmp_path / "s.json", {})
        first.open()
        with pytest.raises(UserError, match="in use by another monitor"):
            StateFile(tmp_path / "s.json", {}).open()
        first.close()


def collect(watcher: SocketWatcher, count: int, out: list[Received]) -> threading.Thread:
    def run() -> None:
        for received in watcher.transitions():
            out.append(received)
            if len(out) >= count:
                return

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def collect_until(watcher: SocketWatcher, last_seq: int, out: list[Received]) -> threading.Thread:
    def run() -> None:
        for received in watcher.transitions():
            out.append(received)
            if received.transition.seq >= last_seq:
                return

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def wait_clients(server: TransitionServer, n: int) -> None:
    for _ in range(500):
        if server.client_count >= n:
            return
        threading.Event().wait(0.01)
    raise AssertionError("client did not connect")


class TestSocket:
    def test_new_client_gets_current_state_first(self, tmp_path: Path) -> None:
        server = TransitionServer(tmp_path / "m.sock")
        server.start()
        try:
            server.publish(tr(1, VipState.BACKUP).to_dict())
            server.publish(tr(2).to_dict())
            got: list[Received] = []
            thread = collect(SocketWatcher(tmp_path / "m.sock", retries=0), 2, got)
            wait_clients(server, 1)
            server.publish(tr(3, VipState.BACKUP).to_dict())
            thread.join(5)
            assert [r.transition.seq for r in got] == [2, 3]
        finally:
            server.close()
        assert not (tmp_path / "m.sock").exists()

    def test_consumer_reconnects_and_applies_only_increasing(self, tmp_path: Path) -> None:
        path = tmp_path / "m.sock"
        server = TransitionServer(path, max_pending=64 * 1024)
        server.start()
        watcher = SocketWatcher(path, retries=50, retry_interval=0.02)
        got: list[Received] = []
        thread = collect(watcher, 3, got)
        try:
            wait_clients(server, 1)
            server.publish(tr(1).to_dict())
            server.publish(tr(2, VipState.BACKUP).to_dict())
            for _ in range(500):
                if len(got) == 2:
                    break
                threading.Event().wait(0.01)
        finally:
            server.close()
        restarted = TransitionServer(path)
        restarted.publish(tr(2, VipState.BACKUP).to_dict())  # a restart re-sends its current state
        restarted.start()
        try:
            wait_clients(restarted, 1)
            restarted.publish(tr(1).to_dict())  # stale: must be dropped
            restarted.publish(tr(3).to_dict())
            thread.join(5)
        finally:
            restarted.close()
        assert [r.transition.seq for r in got] == [1, 2, 3]
        assert watcher.connections == 2 and watcher.dropped == 2

    def test_a_client_that_never_reads_cannot_stall_publishing(self, tmp_path: Path) -> None:
        path = tmp_path / "m.sock"
        server = TransitionServer(path)
        server.start()
        stuck = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stuck.connect(str(path))
        count, pad = 1000, "x" * 2000  # 2 MB: far more than the socket and the buffer hold
        got: list[Received] = []
        watcher = SocketWatcher(path, retries=100, retry_interval=0.01)
        try:
            wait_clients(server, 1)
            reader = collect_until(watcher, count, got)
            wait_clients(server, 2)
            slowest = 0.0
            for seq in range(1, count + 1):
                started = time.monotonic()
                server.publish({**tr(seq).to_dict(), "pad": pad})
                slowest = max(slowest, time.monotonic() - started)
            reader.join(10)
            stuck.settimeout(5)
            while stuck.recv(1 << 20):  # what was buffered for it, then the server's close
                pass
        finally:
            stuck.close()
            server.close()
        assert slowest < 0.5, f"a publish blocked for {slowest:.3f} s"
        seqs = [r.transition.seq for r in got]
        assert seqs == sorted(set(seqs)) and seqs[-1] == count
        assert server.dropped >= 1

    def test_gives_up_after_bounded_retries(self, tmp_path: Path) -> None:
        clock = ManualClock()
        watcher = SocketWatcher(tmp_path / "none.sock", retries=3, retry_interval=1.0, clock=clock)
        start = clock.monotonic()
        with pytest.raises(SocketGoneError, match="after 4 attempts"):
            next(watcher.transitions())
        assert clock.monotonic() - start == 3.0

    def test_live_socket_is_not_stolen(self, tmp_path: Path) -> None:
        server = TransitionServer(tmp_path / "m.sock")
        server.start()
        try:
            with pytest.raises(UserError, match="in use"):
                TransitionServer(tmp_path / "m.sock").start()
        finally:
            server.close()

    def test_stale_socket_file_is_replaced(self, tmp_path: Path) -> None:
        path = tmp_path / "m.sock"
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(str(path))  # left behind by a monitor that died: nobody listens on it
        stale.close()
        with pytest.raises(ConnectionRefusedError):
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(str(path))
            finally:
                probe.close()
        server = TransitionServer(path)
        server.start()  # must not fail with "address in use"
        try:
            server.publish(tr(7).to_dict())
            got: list[Received] = []
            collect(SocketWatcher(path, retries=0), 1, got).join(5)
            assert [r.transition.seq for r in got] == [7]  # a client reaches the new server
        finally:
            server.close()
        assert not path.exists()

    def test_long_socket_path(self, tmp_path: Path) -> None:
        deep = tmp_path / ("d" * 60) / ("e" * 60)
        deep.mkdir(parents=True)
        server = TransitionServer(deep / "m.sock")
        server.start()
        try:
            server.publish(tr(4).to_dict())
            got: list[Received] = []
            collect(SocketWatcher(deep / "m.sock", retries=0), 1, got).join(5)
            assert [r.transition.seq for r in got] == [4]
        finally:
            server.close()
