"""Two ``l3ha watch`` daemons elect a leader over a real etcd: exactly one acts, and when
the leader is killed mid-evacuation the other takes over and finishes the job."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from tests.daemon.etcd_server import EtcdServer, etcd_binary, start_etcd
from tests.watch.daemon_process import Scene, changed, scene, wait_until

pytestmark = pytest.mark.slow

LOCK_TIMEOUT = 3
INTERVAL = 0.2
PACED = ("--max-moves-per-cycle", "4", "--max-moves-per-minute", "60")


@pytest.fixture
def etcd(tmp_path: Path) -> Iterator[EtcdServer]:
    binary = etcd_binary()
    if binary is None:
        pytest.skip("etcd binary not installed (Debian package etcd-server; 'make system-deps')")
    data = tmp_path / "etcd"
    data.mkdir()
    server = start_etcd(binary, data)
    yield server
    server.stop()


def _ts(event: dict[str, object]) -> float:
    return datetime.fromisoformat(str(event["ts"]).replace("Z", "+00:00")).timestamp()


def _on(made: Scene, host: str) -> set[str]:
    return {r for r, hosts in made.bindings().items() if host in hosts}


def test_one_leader_acts_and_a_follower_takes_over_a_killed_leader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, etcd: EtcdServer
) -> None:
    url = etcd.url(LOCK_TIMEOUT)
    # 4 moves at once, then one a second: the kill lands mid-evacuation however fast the
    # writes go (without a budget every move of it is written within a second or so)
    paced = ("--coordination", url, "--concurrency", "2", *PACED)
    with scene(tmp_path, monkeypatch, routers=60, router_base_time=0.4) as made:
        first = made.start_watch(*paced, name="first")
        first.wait_event("leading")
        second = made.start_watch(*paced, name="second", state="state2")
        second.wait_event("ready")
        time.sleep(1.0)
        assert not second.events("leading")  # one leader at a time

        before = made.bindings()
        victims = _on(made, "net-3")
        made.emu.faults.kill_agent("net-3")
        first.wait_event("action", action="evacuate")
        wait_until(lambda: len(_on(made, "net-3")) < len(victims) - 2, 20, "first moves")
        first.kill()  # kill -9 mid-evacuation
        killed_at = time.time()
        assert _on(made, "net-3"), "the evacuation finished before the kill: proves nothing"

        took_over = second.wait_event("leading", timeout=LOCK_TIMEOUT + 10)
        assert _ts(took_over) - killed_at <= LOCK_TIMEOUT + INTERVAL + 1.5
        wait_until(lambda: not _on(made, "net-3"), 40, "the new leader finishes")
        wait_until(lambda: not [r for r, h in made.bindings().items() if not h], 20, "all hosted")
        assert second.terminate() == 0

        after = made.bindings()
        assert set(changed(before, after)) == victims
        moved = Counter(
            str(e["router"])
            for proc in (first, second)
            for e in proc.events("move")
            if e["outcome"] in ("moved", "pending") and e["kind"] in ("move", "bind")
        )
        assert moved and max(moved.values()) == 1, moved  # no router moved twice
        assert not [e for e in first.events("move") if _ts(e) > _ts(took_over)]
