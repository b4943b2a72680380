"""Leader election against a real etcd and real file locks, with real child processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.daemon.etcd_server import EtcdServer, free_port

from l3ha.clock import ManualClock, SystemClock
from l3ha.daemon.leader import MIN_ATTEMPT_INTERVAL, Leadership, default_url, display_url
from l3ha.errors import BadInputError, CoordinationError

HOLDER = Path(__file__).with_name("holder.py")
LOCK_TIMEOUT = 3


def poll(condition: Callable[[], bool], limit: float, step: float = MIN_ATTEMPT_INTERVAL) -> float:
    """Seconds until ``condition()`` holds; fails the test after ``limit`` seconds."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > limit:
            pytest.fail(f"condition not met within {limit} s")
        time.sleep(step)
    return time.monotonic() - start


@pytest.fixture
def leaderships() -> Iterator[Callable[..., Leadership]]:
    """Make Leadership objects; every one is closed at teardown."""
    made: list[Leadership] = []

    def make(url: str, member: str, lock_name: str, **kwargs: object) -> Leadership:
        clock = kwargs.pop("clock", SystemClock())
        leadership = Leadership(url, member, clock, lock_name, **kwargs)  # type: ignore[arg-type]
        made.append(leadership)
        return leadership

    yield make
    for leadership in made:
        leadership.close()


@pytest.fixture
def holder() -> Iterator[Callable[[str, str], subprocess.Popen[str]]]:
    """Start a child process that becomes leader (waits for its LEADER line); killed at teardown."""
    children: list[subprocess.Popen[str]] = []

    def start(url: str, lock_name: str) -> subprocess.Popen[str]:
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[2] / "src"))
        child = subprocess.Popen(
            [sys.executable, str(HOLDER), url, "child", lock_name],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        children.append(child)
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "LEADER"
        return child

    yield start
    for child in children:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=10)


def test_exactly_one_of_two_wins_on_etcd(
    etcd: EtcdServer, leaderships: Callable[..., Leadership]
) -> None:
    a = leaderships(etcd.url(LOCK_TIMEOUT), "a", "one-of-two")
    b = leaderships(etcd.url(LOCK_TIMEOUT), "b", "one-of-two")
    results = [a.try_acquire(), b.try_acquire()]
    assert results == [True, False]
    time.sleep(MIN_ATTEMPT_INTERVAL)
    assert b.try_acquire() is False
    assert a.still_leader() and a.is_leader and not b.is_leader


def test_leader_keeps_the_lock_past_several_lock_timeouts(
    etcd: EtcdServer, leaderships: Callable[..., Leadership]
) -> None:
    a = leaderships(etcd.url(2), "a", "keeps")
    b = leaderships(etcd.url(2), "b", "keeps")
    assert a.try_acquire()
    deadline = time.monotonic() + 2 * 2 + 1
    while time.monotonic() < deadline:
        assert b.try_acquire() is False
        assert a.still_leader()
        time.sleep(0.5)


def test_release_hands_over_at_once(
    etcd: EtcdServer, leaderships: Callable[..., Leadership]
) -> None:
    a = leaderships(etcd.url(LOCK_TIMEOUT), "a", "release")
    b = leaderships(etcd.url(LOCK_TIMEOUT), "b", "release")
    assert a.try_acquire()
    a.release()
    assert not a.is_leader and not a.still_leader()
    assert b.try_acquire()


def test_etcd_takeover_after_leader_sigkill_within_lock_timeout_plus_one_second(
    etcd: EtcdServer,
    leaderships: Callable[..., Leadership],
    holder: Callable[[str, str], subprocess.Popen[str]],
) -> None:
    url = etcd.url(LOCK_TIMEOUT)
    child = holder(url, "takeover")
    follower = leaderships(url, "follower", "takeover")
    assert follower.try_acquire() is False
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    took = poll(follower.try_acquire, LOCK_TIMEOUT + 1)
    print(f"etcd takeover after SIGKILL: {took:.2f} s (lock_timeout {LOCK_TIMEOUT} s)")
    assert took <= LOCK_TIMEOUT + 1


def test_leader_gives_up_before_its_lock_can_expire_when_etcd_dies(
    etcd_factory: Callable[[], EtcdServer], leaderships: Callable[..., Leadership]
) -> None:
    server = etcd_factory()
    leader = leaderships(server.url(LOCK_TIMEOUT), "a", "etcd-dies")
    assert leader.try_acquire()
    time.sleep(0.5)  # a refresh or two have happened
    server.stop()
    gave_up = poll(lambda: not leader.still_leader(), LOCK_TIMEOUT, step=0.02)
    print(f"leader gave up {gave_up:.2f} s after etcd died (lock_timeout {LOCK_TIMEOUT} s)")
    assert leader.give_up_after is not None
    assert gave_up <= leader.give_up_after + 0.1 < LOCK_TIMEOUT
    assert "no successful refresh" in leader.lost_reason
    with pytest.raises(CoordinationError, match="connect failed"):
        time.sleep(MIN_ATTEMPT_INTERVAL)
        leader.try_acquire()


def test_leader_gives_up_in_time_when_etcd_hangs(
    etcd_factory: Callable[[], EtcdServer], leaderships: Callable[..., Leadership]
) -> None:
    server = etcd_factory()
    leader = leaderships(server.url(LOCK_TIMEOUT), "a", "etcd-hangs")
    assert leader.try_acquire()
    server.process.send_signal(signal.SIGSTOP)
    try:
        slowest = 0.0
        start = time.monotonic()
        while leader.still_leader():
            slowest = max(slowest, time.monotonic() - start)
            assert time.monotonic() - start < LOCK_TIMEOUT, "still leader past lock_timeout"
            time.sleep(0.02)
        gave_up = time.monotonic() - start
    finally:
        server.process.send_signal(signal.SIGCONT)
    print(f"leader gave up {gave_up:.2f} s after etcd hung")
    assert leader.give_up_after is not None
    assert gave_up <= leader.give_up_after + 0.1


def test_a_lock_that_expired_and_was_taken_is_noticed(
    etcd: EtcdServer, leaderships: Callable[..., Leadership]
) -> None:
    frozen = ManualClock()
    old = leaderships(etcd.url(2), "old", "expired", clock=frozen, heartbeat_thread=False)
    new = leaderships(etcd.url(2), "new", "expired")
    assert old.try_acquire()
    poll(new.try_acquire, 2 + 1)  # old never refreshed: its lease expired
    frozen.advance(1.0)  # on old's own clock a refresh is due, but not the give-up
    assert old.still_leader() is False
    assert "no longer ours" in old.lost_reason
    assert new.still_leader()


def test_unreachable_etcd_is_a_one_line_coordination_error(
    leaderships: Callable[..., Leadership],
) -> None:
    url = f"etcd3+http://127.0.0.1:{free_port()}?lock_timeout=3"
    leadership = leaderships(url, "a", "nobody")
    with pytest.raises(CoordinationError) as caught:
        leadership.connect()
    message = str(caught.value)
    assert "\n" not in message
    assert message == (
        f"coordination service {display_url(url)}: connect failed: [Errno 111] Connection refused"
    )
    assert caught.value.retryable


def test_unknown_scheme_is_bad_input(leaderships: Callable[..., Leadership]) -> None:
    with pytest.raises(BadInputError, match="no usable tooz driver for scheme 'nosuch'"):
        leaderships("nosuch://127.0.0.1:1", "a", "x").connect()


def test_display_url_drops_credentials_and_options() -> None:
    url = "redis://user:secret@127.0.0.1:6379/0?lock_timeout=5"
    assert display_url(url) == "redis://127.0.0.1:6379/0"


def test_file_lock_one_of_two_processes_wins_and_kill9_releases_it_at_once(
    tmp_path: Path,
    leaderships: Callable[..., Leadership],
    holder: Callable[[str, str], subprocess.Popen[str]],
) -> None:
    url = default_url(tmp_path)
    assert url.startswith("file:///")
    child = holder(url, "file-lock")
    follower = leaderships(url, "follower", "file-lock")
    assert follower.try_acquire() is False
    assert follower.lock_timeout is None
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    start = time.monotonic()
    took = poll(follower.try_acquire, 1.0, step=0.01)
    print(f"file lock takeover after SIGKILL: {time.monotonic() - start:.3f} s")
    assert took < 0.5
    assert follower.still_leader()


def test_file_lock_in_one_process_admits_one_holder(
    tmp_path: Path, leaderships: Callable[..., Leadership]
) -> None:
    a = leaderships(default_url(tmp_path), "a", "same-process")
    b = leaderships(default_url(tmp_path), "b", "same-process")
    assert a.try_acquire() and not b.try_acquire()
    a.release()
    time.sleep(MIN_ATTEMPT_INTERVAL)
    assert b.try_acquire()
