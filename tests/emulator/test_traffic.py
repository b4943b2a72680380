"""The emulator's per-router traffic counters (``GET /_emulator/metrics``) on a ManualClock."""

from __future__ import annotations

import re
import urllib.request

from l3ha.clock import ManualClock
from l3ha.emulator import Emulator

from .conftest import make

SERIES = re.compile(
    r'^l3ha_emulator_router_(bytes|packets)_total\{router_id="([^"]+)",host="([^"]+)"\} (\d+)$'
)


def _scrape(emu: Emulator) -> tuple[str, dict[tuple[str, str, str], int]]:
    with urllib.request.urlopen(emu.url + "/_emulator/metrics", timeout=10) as answer:
        content_type = answer.headers["Content-Type"]
        text = answer.read().decode()
    values = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = SERIES.match(line)
        assert match, line
        kind, router, host, value = match.groups()
        values[(kind, router, host)] = int(value)
    return content_type, values


def _bytes(values: dict[tuple[str, str, str], int], router: str) -> int:
    return sum(v for (kind, r, _), v in values.items() if kind == "bytes" and r == router)


def test_counters_grow_with_time_and_busy_and_hot_routers_carry_far_more() -> None:
    with make(ManualClock(), agents=3, routers=30, busy=3, hot=3, seed=9) as emu:
        content_type, first = _scrape(emu)
        emu.advance(10.0)
        _, later = _scrape(emu)
        assert content_type.startswith("text/plain; version=0.0.4")
        tagged = {r.id for r in emu.world.routers.values() if r.tags}
        hot = emu.traffic.hot
        assert len(hot) == 3 and not hot & tagged
        assert not any(emu.world.routers[r].tags for r in hot)
        rates = {r: (_bytes(later, r) - _bytes(first, r)) / 10.0 for r in emu.world.routers}
        quiet = [rate for r, rate in rates.items() if r not in hot | tagged]
        busy = [rate for r, rate in rates.items() if r in hot | tagged]
        assert min(quiet) >= 8_000 and max(quiet) <= 12_000
        assert min(busy) >= 150_000 and max(busy) <= 1_000_000
        assert min(busy) / max(quiet) >= 10
        packets = {r: v for (kind, r, _), v in later.items() if kind == "packets"}
        assert all(packets[r] == _bytes(later, r) // 800 for r in packets)


def test_a_dead_agents_routers_stop_counting_and_a_moved_router_counts_on_its_new_host() -> None:
    with make(ManualClock(), agents=2, routers=4, seed=1, router_base_time=0.1) as emu:
        hosts = {
            r.id: next(iter(r.bindings.values())).agent.host for r in emu.world.routers.values()
        }
        on_1 = sorted(r for r, h in hosts.items() if h == "net-1")
        emu.advance(5.0)
        emu.faults.kill_agent("net-1")
        _, at_death = _scrape(emu)
        emu.advance(5.0)
        _, later = _scrape(emu)
        for router in on_1:
            assert _bytes(later, router) == _bytes(at_death, router) > 0
        for router in set(hosts) - set(on_1):
            assert _bytes(later, router) > _bytes(at_death, router)
        moved = on_1[0]
        with emu.world.lock:
            record = emu.world.routers[moved]
            emu.sim.unbind(record, emu.world.agents_by_host["net-1"])
            emu.sim.bind(record, emu.world.agents_by_host["net-2"])
        emu.advance(5.0)
        _, after_move = _scrape(emu)
        assert after_move[("bytes", moved, "net-1")] == later[("bytes", moved, "net-1")]
        assert after_move[("bytes", moved, "net-2")] > 0
