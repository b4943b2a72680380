"""Traffic weights from a real Prometheus scraping the emulator's per-router counters.

Debian's ``prometheus`` runs on loopback with a 1 s scrape interval; the
emulator's hot routers carry no tag and 15-100 times the traffic of the
others, so only the measurement can find them.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.watch.daemon_process import scene, wait_until
from tests.weights.prometheus_server import (
    BYTES_RATE,
    PrometheusServer,
    wait_for_full_window,
    wait_for_series,
)

from l3ha.cli.main import main
from l3ha.cloud.adapter import connect
from l3ha.emulator import Emulator
from l3ha.model import Snapshot

pytestmark = pytest.mark.slow

#: One unit of weight per 10 kB/s: quiet routers (8-12 kB/s) weigh 1, hot ones 15-100.
UNIT = "10000"

MakeCloud = Callable[..., Emulator]
StartPrometheus = Callable[[Emulator], PrometheusServer]


def _traffic_options(server: PrometheusServer, query: str = BYTES_RATE) -> list[str]:
    return ["--weights-prometheus", server.url, "--weights-query", query, "--weight-unit", UNIT]


def _rows(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, object]]:
    code = main([*argv, "-f", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows: list[dict[str, object]] = json.loads(out)
    return rows


def _every_router_measured(emu: Emulator) -> Callable[[dict[str, float]], bool]:
    routers = set(emu.world.routers)
    return lambda values: routers <= set(values) and all(v > 0 for v in values.values())


def _hot_on(snapshot: Snapshot, hot: set[str]) -> Counter[str]:
    hosts = {a.id: a.host for a in snapshot.agents}
    return Counter(hosts[b.agent_id] for b in snapshot.bindings if b.router_id in hot)


def _move_all(emu: Emulator, routers: set[str], host: str) -> None:
    """Bind every router in ``routers`` to ``host`` alone, through the API."""
    cloud = connect()
    target = cloud.read_snapshot().find_agent(host)
    for router_id in sorted(routers):
        for binding in cloud.router_bindings(router_id):
            if binding.agent_id != target.id:
                cloud.unbind(router_id, binding.agent_id)
        if target.id not in {b.agent_id for b in cloud.router_bindings(router_id)}:
            cloud.bind(router_id, target.id)

    def forwarding_there() -> bool:
        with emu.world.lock:
            return all(emu.traffic.forwarding_host(emu.world.routers[r]) == host for r in routers)

    wait_until(forwarding_there, 20, f"the routers forwarding on {host}")


def _kill(emu: Emulator, host: str) -> None:
    emu.faults.kill_agent(host)
    wait_until(lambda: not connect().read_snapshot().find_agent(host).alive, 10, f"{host} dead")


def test_router_list_shows_the_hot_routers_busy_from_traffic_alone(
    make_cloud: MakeCloud, prometheus_for: StartPrometheus, capsys: pytest.CaptureFixture[str]
) -> None:
    emu = make_cloud(agents=3, routers=12, busy=0, hot=3, seed=5)
    server = prometheus_for(emu)
    wait_for_full_window(server, set(emu.world.routers))

    rows = _rows(capsys, "router", "list", *_traffic_options(server), "-c", "id", "-c", "weight",
                 "-c", "weight_source", "-c", "busy", "-c", "tags")  # fmt: skip

    assert all(row["tags"] == [] for row in rows)
    assert {row["id"] for row in rows if row["busy"]} == emu.traffic.hot
    assert {row["weight_source"] for row in rows} == {"prometheus"}
    quiet = [row for row in rows if row["id"] not in emu.traffic.hot]
    assert {row["weight"] for row in quiet} == {1}
    # Without the measurement nothing is busy: no tag says so.
    plain = _rows(capsys, "router", "list", "-c", "id", "-c", "busy", "-c", "weight_source")
    assert not [row for row in plain if row["busy"]]
    assert {row["weight_source"] for row in plain} == {"default"}


def test_an_evacuation_spreads_the_routers_prometheus_finds_busy(
    make_cloud: MakeCloud, prometheus_for: StartPrometheus, capsys: pytest.CaptureFixture[str]
) -> None:
    emu = make_cloud(agents=4, routers=16, busy=0, hot=4, seed=11)
    hot = set(emu.traffic.hot)
    _move_all(emu, hot, "net-1")  # every hot router on the agent that will die
    server = prometheus_for(emu)
    wait_for_full_window(server, set(emu.world.routers))
    _kill(emu, "net-1")

    code = main(["evacuate", "net-1", *_traffic_options(server), "--port-timeout", "20"])
    out, err = capsys.readouterr()

    assert code == 0, out + err
    assert "warning" not in err
    after = connect().read_snapshot()
    dead = after.find_agent("net-1")
    assert after.bindings_of_agent(dead.id) == ()
    spread = _hot_on(after, hot)
    live = ["net-2", "net-3", "net-4"]
    # No agent got a second hot router while another had none: 2/1/1.
    assert sorted(spread[h] for h in live) == [1, 1, 2], spread


def test_prometheus_gone_before_an_evacuation_warns_and_the_other_weights_apply(
    make_cloud: MakeCloud, prometheus_for: StartPrometheus, capsys: pytest.CaptureFixture[str]
) -> None:
    emu = make_cloud(agents=4, routers=24, busy=0, hot=2, seed=2)
    server = prometheus_for(emu)
    wait_for_series(server, BYTES_RATE, _every_router_measured(emu))
    # The routers with 3 interface ports (every third) are busy by their ports.
    by_ports = {r.id for r in emu.world.routers.values() if r.interfaces >= 3}
    _move_all(emu, by_ports, "net-1")
    server.stop()
    _kill(emu, "net-1")

    code = main(["evacuate", "net-1", *_traffic_options(server), "--busy-ports", "3",
                 "--weights-timeout", "2", "--port-timeout", "20"])  # fmt: skip
    out, err = capsys.readouterr()

    assert code == 0, out + err
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert len(warnings) == 1, err
    assert f"Prometheus at {server.url}: unreachable" in warnings[0]
    assert "the other weights still apply" in warnings[0]
    spread = _hot_on(connect().read_snapshot(), by_ports)
    counts = [spread[h] for h in ("net-2", "net-3", "net-4")]
    assert max(counts) - min(counts) <= 1, spread


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ("1", "expected an instant vector, got scalar"),
        ("up", "a sample has no 'router_id' label"),
        ("rate(", "HTTP 400"),
    ],
)
def test_a_malformed_answer_is_one_warning_and_the_tags_still_count(
    make_cloud: MakeCloud,
    prometheus_for: StartPrometheus,
    capsys: pytest.CaptureFixture[str],
    query: str,
    problem: str,
) -> None:
    emu = make_cloud(agents=2, routers=6, busy=2, seed=1)
    server = prometheus_for(emu)
    wait_for_series(server, BYTES_RATE, _every_router_measured(emu))

    code = main(["router", "list", *_traffic_options(server, query), "-f", "json"])
    out, err = capsys.readouterr()

    assert code == 0
    assert err.count("\n") == 1 and problem in err and "Traceback" not in err, err
    rows = json.loads(out)
    assert sorted(row["weight_source"] for row in rows) == ["default"] * 4 + ["tag"] * 2


def test_the_daemon_keeps_failing_over_when_prometheus_stops_mid_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prometheus_for: StartPrometheus
) -> None:
    with scene(tmp_path, monkeypatch, agents=4, routers=16, busy=0, hot=4, seed=11) as made:
        server = prometheus_for(made.emu)
        wait_for_full_window(server, set(made.emu.world.routers))
        watch = made.start_watch(*_traffic_options(server), "--busy-ports", "3",
                                 "--weights-interval", "1", "--weights-timeout", "1")  # fmt: skip
        watch.wait_event("ready")
        server.stop()
        warning = watch.wait_event("weights_warning", timeout=30)
        assert "unreachable" in str(warning["message"])
        victim = "net-2"
        victims = {r for r, hosts in made.bindings().items() if victim in hosts}
        made.emu.faults.kill_agent(victim)

        def evacuated() -> bool:  # off the victim and on another agent (a legacy move has a gap)
            now = made.bindings()
            return all(now[r] and victim not in now[r] for r in victims)

        wait_until(evacuated, 40, "evacuated")
        time.sleep(1.5)  # one more weights interval: still warning, still running
        assert watch.process.poll() is None
        assert watch.terminate() == 0
