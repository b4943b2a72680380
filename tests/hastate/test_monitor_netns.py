"""``l3ha ha monitor`` on a real namespace: the test adds/removes the VIP itself, very quickly.

Needs root (network namespaces). Each test makes a namespace ``l3ha-mon-*``
with a veth pair, runs the monitor as a subprocess of this python, and checks
the order of what it reports (socket, state file, hooks) and its final state.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.hastate.conftest import namespace_name, sweep

from l3ha.hastate.consumer import Received, SocketWatcher
from l3ha.hastate.netlink import AddressWatcher, netlink_socket
from l3ha.hastate.statefile import read_transition
from l3ha.hastate.vipstate import Transition, VipState, parse_vip
from l3ha.lab.netns import list_namespaces, pids_in

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
]
VIP = "169.254.77.1/24"
START_TIMEOUT = 20.0


def ip(*args: str, stdin: str | None = None) -> None:
    subprocess.run(["ip", *args], check=True, input=stdin, text=True, capture_output=True)


def wait_for(what: str, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def netns() -> Iterator[str]:
    name = namespace_name(uuid.uuid4().hex[:8])
    ip("netns", "add", name)
    try:
        ip("-n", name, "link", "add", "d0", "type", "veth", "peer", "name", "d1")
        ip("-n", name, "link", "set", "d0", "up")
        ip("-n", name, "link", "set", "d1", "up")
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True)


class MonitorProcess:
    def __init__(
        self, netns: str, workdir: Path, hook: Path | None = None, state_file: bool = True
    ) -> None:
        self.state = workdir / "state.json"
        self.sock = workdir / "mon.sock"
        argv = [sys.executable, "-m", "l3ha.cli.main", "ha", "monitor", "--netns", netns]
        argv += ["--device", "d0", "--vip", VIP, "--socket", str(self.sock)]
        if state_file:
            argv += ["--state-file", str(self.state)]
        if hook is not None:
            argv += ["--exec", str(hook)]
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def wait_socket(self) -> None:
        """Until the monitor listens (for monitors without a state file)."""
        wait_for("monitor socket", self.sock.exists, START_TIMEOUT)

    def wait_ready(self, min_seq: int = 1) -> Transition:
        def ready() -> bool:
            t = read_transition(self.state) if self.state.exists() else None
            return t is not None and t.seq >= min_seq and self.sock.exists()

        wait_for("monitor start", ready, START_TIMEOUT)
        found = read_transition(self.state)
        assert found is not None
        return found

    def stop(self) -> tuple[int, str, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=15)
        return self.proc.returncode, out, err


@pytest.fixture
def monitors() -> Iterator[list[MonitorProcess]]:
    started: list[MonitorProcess] = []
    try:
        yield started
    finally:
        for m in started:
            if m.proc.poll() is None:
                m.proc.kill()
                m.proc.wait()


def follow(sock: Path, count: int) -> tuple[list[Received], threading.Thread]:
    got: list[Received] = []

    def run() -> None:
        for received in SocketWatcher(sock, retries=100, retry_interval=0.05).transitions():
            got.append(received)
            if len(got) >= count:
                return

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return got, thread


def vip_batch(netns: str, ops: list[str]) -> None:
    """Run every add/del in one ``ip -batch`` process: microseconds apart."""
    script = "".join(f"address {op} {VIP} dev d0\n" for op in ops)
    ip("-n", netns, "-batch", "-", stdin=script)


def test_add_del_add_in_microseconds_is_reported_in_order(
    netns: str, tmp_path: Path, monitors: list[MonitorProcess]
) -> None:
    mon = MonitorProcess(netns, tmp_path)
    monitors.append(mon)
    first = mon.wait_ready()
    assert (first.seq, first.state) == (1, VipState.BACKUP)
    got, thread = follow(mon.sock, 4)
    wait_for("consumer", lambda: len(got) == 1)
    vip_batch(netns, ["add", "del", "add"])
    thread.join(10)
    assert [(r.transition.seq, r.transition.state.value) for r in got] == [
        (1, "backup"),
        (2, "master"),
        (3, "backup"),
        (4, "master"),
    ]
    monos = [r.transition.monotonic for r in got]
    assert monos == sorted(monos)
    final = read_transition(mon.state)
    assert final is not None and (final.seq, final.state) == (4, VipState.MASTER)


def test_state_file_never_regresses_under_churn(
    netns: str, tmp_path: Path, monitors: list[MonitorProcess]
) -> None:
    mon = MonitorProcess(netns, tmp_path)
    monitors.append(mon)
    mon.wait_ready()
    seen: list[int] = []
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            t = read_transition(mon.state)
            if t is not None:
                seen.append(t.seq)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    ops = ["add", "del"] * 100 + ["add"]
    vip_batch(netns, ops)
    wait_for("final seq", lambda: seq_of(mon.state) == 202)
    stop.set()
    poller.join(5)
    seen.append(seq_of(mon.state))
    assert seen == sorted(seen) and seen[-1] == 202
    final = read_transition(mon.state)
    assert final is not None and final.state is VipState.MASTER


def seq_of(path: Path) -> int:
    found = read_transition(path)
    return found.seq if found else 0


def test_starts_from_current_state_and_continues_numbering_after_restart(
    netns: str, tmp_path: Path, monitors: list[MonitorProcess]
) -> None:
    ip("-n", netns, "address", "add", VIP, "dev", "d0")
    mon = MonitorProcess(netns, tmp_path)
    monitors.append(mon)
    assert mon.wait_ready().state is VipState.MASTER
    code, out, err = mon.stop()
    assert code == 0, err
    assert not mon.sock.exists()
    assert json.loads(out.splitlines()[0])["state"] == "master"
    ip("-n", netns, "address", "del", VIP, "dev", "d0")
    again = MonitorProcess(netns, tmp_path)
    monitors.append(again)
    t = again.wait_ready(min_seq=2)
    assert (t.seq, t.state) == (2, VipState.BACKUP)


def test_hooks_run_serially_newest_first(
    netns: str, tmp_path: Path, monitors: list[MonitorProcess]
) -> None:
    log = tmp_path / "hooks.log"
    hook = tmp_path / "hook.sh"
    hook.write_text(
        f'#!/bin/sh\necho "start $2 $1" >> {log}\nsleep 0.2\necho "end $2 $1" >> {log}\n'
    )
    hook.chmod(0o755)
    mon = MonitorProcess(netns, tmp_path, hook)
    monitors.append(mon)
    mon.wait_ready()
    for _ in range(5):
        vip_batch(netns, ["add", "del"])
        time.sleep(0.03)
    vip_batch(netns, ["add"])
    wait_for("last hook", lambda: log.exists() and "end 12 master" in log.read_text())
    lines = [line.split() for line in log.read_text().splitlines()]
    marks = [mark for mark, _, _ in lines]
    assert marks == ["start", "end"] * (len(lines) // 2)  # never two at once
    seqs = [int(seq) for mark, seq, _ in lines if mark == "start"]
    assert seqs == sorted(set(seqs)) and seqs[0] == 1 and seqs[-1] == 12
    assert len(seqs) < 12  # superseded transitions were skipped


def test_bad_input_is_one_line_exit_2(netns: str, tmp_path: Path) -> None:
    base = [sys.executable, "-m", "l3ha.cli.main", "ha", "monitor", "--vip", VIP]
    for extra, needle in [
        (["--netns", netns, "--device", "nope0"], "device 'nope0' not found"),
        (["--netns", "l3ha-mon-absent", "--device", "d0"], "l3ha-mon-absent"),
        (["--netns", netns, "--device", "d0", "--vip", "1.2.3"], "invalid VIP"),
    ]:
        run = subprocess.run(base + extra, check=False, capture_output=True, text=True, timeout=30)
        assert run.returncode == 2, run.stderr
        assert needle in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_lost_events_trigger_a_fresh_dump(netns: str) -> None:
    """With a tiny receive buffer the kernel drops events (ENOBUFS); the watcher dumps again."""
    sock = netlink_socket(netns)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)  # the kernel's minimum
        watcher = AddressWatcher(sock, "d0", parse_vip(VIP))
        watcher.subscribe_and_dump()
        observations = watcher.wait(5)
        assert observations == [False]
        vip_batch(netns, ["add", "del"] * 200 + ["add"])
        last: list[bool] = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (watcher.ordering.dumping or not last):
            last = watcher.wait(0.2) or last
        while time.monotonic() < deadline:  # drain what is left
            got = watcher.wait(0.2)
            if not got and not watcher.ordering.dumping:
                break
            last = got or last
        assert watcher.resyncs >= 2
        assert last[-1] is True
    finally:
        sock.close()


@pytest.mark.parametrize(
    ("state_file", "expected"),
    [
        (True, [(1, "backup"), (2, "master"), (3, "backup"), (4, "master")]),
        # without a state file the restarted monitor numbers from 1 again: a new run
        (False, [(1, "backup"), (2, "master"), (1, "backup"), (2, "master")]),
    ],
    ids=["state-file", "no-state-file"],
)
def test_watch_socket_cli_follows_a_restarting_monitor(
    netns: str,
    tmp_path: Path,
    monitors: list[MonitorProcess],
    state_file: bool,
    expected: list[tuple[int, str]],
) -> None:
    mon = MonitorProcess(netns, tmp_path, state_file=state_file)
    monitors.append(mon)
    mon.wait_socket()
    argv = [sys.executable, "-m", "l3ha.cli.main", "ha", "watch-socket", str(mon.sock)]
    argv += ["--count", "4", "--retries", "200", "--retry-interval", "0.05", "-f", "json"]
    watch = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[dict[str, object]] = []

    def read() -> None:
        assert watch.stdout is not None
        for line in watch.stdout:
            lines.append(json.loads(line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        wait_for("watcher's first line", lambda: len(lines) == 1, START_TIMEOUT)
        vip_batch(netns, ["add"])
        wait_for("watcher's second line", lambda: len(lines) == 2)
        mon.stop()
        vip_batch(netns, ["del"])  # while no monitor runs
        again = MonitorProcess(netns, tmp_path, state_file=state_file)
        monitors.append(again)
        # a reconnecting consumer gets the current state (not the history)
        wait_for("watcher's third line (after reconnecting)", lambda: len(lines) == 3, 30)
        vip_batch(netns, ["add"])
        try:
            watch.wait(timeout=30)
        except subprocess.TimeoutExpired:
            watch.kill()
            raise AssertionError(f"watcher stuck after {lines}") from None
        reader.join(5)
        assert watch.returncode == 0
        assert watch.stderr is not None
        err = watch.stderr.read()
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()
    assert [(d["seq"], d["state"]) for d in lines] == expected
    runs = [d["run"] for d in lines]
    assert runs[0] == runs[1] != runs[2] == runs[3] and all(runs)
    assert err.count("monitor restarted") == 1 and len(err.strip().splitlines()) == 1, err


def test_watch_socket_cli_gives_up_with_one_line(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "l3ha.cli.main", "ha", "watch-socket", str(tmp_path / "x")]
    run = subprocess.run(
        [*argv, "--retries", "1", "--retry-interval", "0.01"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert run.returncode == 1
    assert "cannot connect" in run.stderr and len(run.stderr.strip().splitlines()) == 1


def dead_pid() -> int:
    """The pid of a process that has exited (as a crashed pytest's pid would be)."""
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def test_sweep_removes_leftovers_of_dead_sessions_only() -> None:
    orphan = f"l3ha-mon-{dead_pid()}-{uuid.uuid4().hex[:8]}"
    mine = namespace_name(uuid.uuid4().hex[:8])
    ip("netns", "add", orphan)
    ip("netns", "add", mine)
    sleeper = subprocess.Popen(["ip", "netns", "exec", orphan, "sleep", "60"])
    try:
        wait_for("process inside the orphan", lambda: sleeper.pid in pids_in(orphan))
        assert sweep(include_own=False) == [orphan]
        assert sleeper.wait(5) is not None
        assert orphan not in list_namespaces() and mine in list_namespaces()
        assert sweep(include_own=True) == [mine]
        assert mine not in list_namespaces()
    finally:
        sleeper.kill()
        sleeper.wait()
        for name in (orphan, mine):
            subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True)


def test_device_deleted_and_recreated_is_followed(
    netns: str, tmp_path: Path, monitors: list[MonitorProcess]
) -> None:
    mon = MonitorProcess(netns, tmp_path)
    monitors.append(mon)
    mon.wait_ready()
    vip_batch(netns, ["add"])
    wait_for("master", lambda: seq_of(mon.state) == 2)
    ip("-n", netns, "link", "del", "d0")  # takes the VIP with it
    wait_for("backup after the device is gone", lambda: seq_of(mon.state) == 3)
    ip("-n", netns, "link", "add", "d0", "type", "veth", "peer", "name", "d1")
    ip("-n", netns, "link", "set", "d0", "up")
    vip_batch(netns, ["add"])  # on the new d0 (a new interface index)
    wait_for("master on the recreated device", lambda: seq_of(mon.state) == 4)
    final = read_transition(mon.state)
    assert final is not None and final.state is VipState.MASTER
    code, _, err = mon.stop()
    assert code == 0, err
