"""Weights from interface ports and floating IPs, read from the emulator; the options on every
command that plans; bad options; the daemon's refresh period and its metrics."""

from __future__ import annotations

import contextlib
import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.cloud.neutron_fake import closed_port

from l3ha.cli.main import main
from l3ha.clock import ManualClock
from l3ha.cloud.adapter import NeutronCloud, connect
from l3ha.daemon.metrics import WatchMetrics
from l3ha.emulator import Emulator
from l3ha.emulator.testing import Clocking, emulated_cloud
from l3ha.measurement import MeasureOptions, Weigher, measure
from l3ha.weights import Measured, WeightPolicy, WeightSource

PLANNING = ("evacuate", "drain", "migrate", "rebalance", "repair", "plan evacuate",
            "plan drain", "plan migrate", "plan rebalance", "plan repair", "watch",
            "router list", "agent list")  # fmt: skip


@contextlib.contextmanager
def _cloud(workdir: Path, **settings: object) -> Iterator[Emulator]:
    """On a ManualClock, named by OS_CLOUD."""
    base: dict[str, object] = {"agents": 4, "routers": 30, "busy": 2, "seed": 4}
    with emulated_cloud(
        Clocking.MANUAL, workdir=workdir, environ=os.environ, **{**base, **settings}
    ) as cloud:
        assert cloud.emulator is not None
        yield cloud.emulator


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    with _cloud(tmp_path) as emu:
        yield emu


def _rows(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    code = main([*argv, "-f", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows: list[dict[str, Any]] = json.loads(out)
    return rows


def _sources(rows: list[dict[str, Any]]) -> dict[str, str]:
    return {row["id"]: row["weight_source"] for row in rows}


def test_routers_with_enough_interface_ports_are_busy(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    routers = list(emulator.world.routers.values())
    tagged = {r.id for r in routers if r.tags}
    many_ports = {r.id for r in routers if r.interfaces >= 3}
    assert many_ports - tagged and tagged

    rows = _rows(capsys, "router", "list", "--busy-ports", "3", "-c", "id", "-c", "weight",
                 "-c", "weight_source", "-c", "busy")  # fmt: skip

    sources = _sources(rows)
    assert {r for r, s in sources.items() if s == "ports"} == many_ports - tagged
    assert {r for r, s in sources.items() if s == "tag"} == tagged
    assert {row["id"] for row in rows if row["busy"]} == many_ports | tagged
    assert {row["weight"] for row in rows if row["weight_source"] == "ports"} == {10}


def test_routers_with_enough_floating_ips_are_busy_and_max_mode_beats_a_light_tag(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    with_fips = {r.id for r in emulator.world.routers.values() if r.fips}
    light = sorted(with_fips)[0]
    with emulator.world.lock:
        emulator.world.set_tags(emulator.world.routers[light], ["l3ha:weight=2"],
                                emulator.clock.wall())  # fmt: skip
    args = ("router", "list", "--busy-fips", "1", "-c", "id", "-c", "weight", "-c", "weight_source")
    rows = {row["id"]: row for row in _rows(capsys, *args)}
    assert {r for r, row in rows.items() if row["weight_source"] == "fips"} <= with_fips
    assert (rows[light]["weight"], rows[light]["weight_source"]) == (2, "tag")

    rows = {row["id"]: row for row in _rows(capsys, *args, "--weight-combine", "max")}
    assert (rows[light]["weight"], rows[light]["weight_source"]) == (10, "fips")


def test_ports_and_floating_ips_cost_one_listing_each_whatever_the_cloud_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    costs = []
    for routers in (20, 400):
        with _cloud(tmp_path, routers=routers) as emu:
            cloud = connect()
            paths = _recorded_paths(cloud)
            options = MeasureOptions(busy_ports=2, busy_fips=1)
            measurement = measure(options, cloud, 10)
            assert not measurement.warnings
            costs.append((measurement.calls, sorted(paths)))
            counted = sum(1 for m in measurement.measured.values() if m.source is WeightSource.FIPS)
            assert counted == sum(1 for r in emu.world.routers.values() if r.fips)
    assert costs[0] == costs[1]
    assert costs[0][0] == 2
    assert costs[0][1] == ["/floatingips", "/ports"]


def _recorded_paths(cloud: NeutronCloud) -> list[str]:
    """Record the path of every request the adapter sends (passing each through)."""
    paths: list[str] = []
    network = cloud.api.conn.network
    real = network.request

    def recording(path: str, *args: Any, **kwargs: Any) -> Any:
        paths.append(path)
        return real(path, *args, **kwargs)

    network.request = recording
    return paths


@pytest.mark.parametrize("command", PLANNING)
def test_every_planning_command_has_the_measured_weight_options(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main([*command.split(), "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for option in ("--busy-ports", "--busy-fips", "--weights-prometheus", "--weights-query",
                   "--weight-unit", "--max-weight ", "--weight-combine"):  # fmt: skip
        assert option in text, option
    if command == "watch":
        assert "--weights-interval" in text


@pytest.mark.parametrize("command", ["plan rebalance", "rebalance --dry-run"])
def test_a_rebalance_spreads_the_routers_busy_by_ports(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    many_ports = {r.id for r in emulator.world.routers.values() if r.interfaces >= 3 and not r.tags}
    host = {
        r.id: next(iter(r.bindings.values())).agent.host for r in emulator.world.routers.values()
    }
    main([*command.split(), "--busy-ports", "3", "-f", "json"])
    document = json.loads(capsys.readouterr().out)
    after = dict(host)
    for move in document["moves"]:
        after[move["router"]] = move["target"]
    busy = many_ports | {r.id for r in emulator.world.routers.values() if r.tags}
    per_host = Counter(after[r] for r in busy)
    counts = [per_host.get(f"net-{n}", 0) for n in range(1, 5)]
    assert max(counts) - min(counts) <= 1, per_host


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--weights-prometheus", "http://127.0.0.1:9090"], "needs --weights-query PROMQL"),
        (["--weights-prometheus", "127.0.0.1:9090", "--weights-query", "x"], "http:// or https://"),
        (["--weights-query", "x"], "--weights-query needs --weights-prometheus"),
        (["--busy-ports", "0"], "--busy-ports"),
        (["--weight-unit", "-1"], "--weight-unit"),
        (["--weight-combine", "sum"], "--weight-combine"),
    ],
)
def test_bad_weight_options_are_one_line_errors_exit_2(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], argv: list[str], problem: str
) -> None:
    before = {r.id: sorted(r.bindings) for r in emulator.world.routers.values()}
    try:
        code = main(["rebalance", *argv])
    except SystemExit as exc:  # argparse refuses a bad value itself
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert code == 2
    assert problem in err and "Traceback" not in err and err.count("\n") == 1, err
    assert {r.id: sorted(r.bindings) for r in emulator.world.routers.values()} == before


def test_ports_cannot_be_counted_in_a_saved_snapshot(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "snap.json"
    assert main(["snapshot", "save", str(path)]) == 0
    capsys.readouterr()
    code = main(["plan", "rebalance", "--snapshot", str(path), "--busy-fips", "1"])
    err = capsys.readouterr().err
    assert code == 2
    assert err == (
        "l3ha: error: --busy-ports and --busy-fips read the cloud; "
        "they cannot be used with --snapshot\n"
    )


def test_the_daemon_weigher_reads_again_only_when_its_interval_is_up() -> None:
    clock = ManualClock()
    warnings: list[str] = []
    answers = iter([{"a": 3e6}, {"a": 5e6}])

    def prometheus(url: str, query: str, timeout: float) -> dict[str, float]:
        return next(answers)

    options = MeasureOptions(prometheus_url="http://127.0.0.1:9", query="q", unit=1e6)
    weigher = Weigher(options, None, WeightPolicy(), interval=60.0, clock=clock,
                      warn=warnings.append, prometheus=prometheus)  # fmt: skip
    assert weigher.policy().measured == {"a": Measured(3, WeightSource.PROMETHEUS)}
    clock.advance(59.0)
    assert weigher.policy().measured["a"].weight == 3
    assert weigher.refreshes == 1
    clock.advance(1.0)
    assert weigher.policy().measured["a"].weight == 5
    assert weigher.refreshes == 2
    assert warnings == []


def test_an_unreachable_prometheus_is_a_warning_per_reading_and_tags_still_count() -> None:
    clock = ManualClock()
    warnings: list[str] = []
    url = f"http://127.0.0.1:{closed_port()}"
    options = MeasureOptions(prometheus_url=url, query="q", timeout=1.0)
    weigher = Weigher(options, None, WeightPolicy(), interval=10.0, clock=clock,
                      warn=warnings.append)  # fmt: skip
    policy = weigher.policy()
    assert policy.measured == {}
    assert policy.is_busy(_tagged := _router_with("l3ha:busy"))
    weigher.policy()
    assert len(warnings) == 1
    clock.advance(10.0)
    weigher.policy()
    assert len(warnings) == 2
    assert f"Prometheus at {url}: unreachable" in warnings[0]


def _router_with(*tags: str) -> Any:
    from l3ha.model import Router

    return Router(id="r", tags=tags)


def test_the_weight_distribution_is_exported() -> None:
    from prometheus_client import generate_latest

    metrics = WatchMetrics("m")
    metrics.set_weights([1, 1, 3, 10, 12, 60, 250], {"prometheus": 4, "tag": 3, "default": 0})
    metrics.weights_measured_at(1700000000.0, errors=1)
    text = generate_latest(metrics.registry).decode()
    for line in (
        'l3ha_routers_by_weight{weight="1"} 2.0',
        'l3ha_routers_by_weight{weight="2-4"} 1.0',
        'l3ha_routers_by_weight{weight="5-9"} 0.0',
        'l3ha_routers_by_weight{weight="10-19"} 2.0',
        'l3ha_routers_by_weight{weight="50-99"} 1.0',
        'l3ha_routers_by_weight{weight="100+"} 1.0',
        'l3ha_routers_by_weight_source{source="prometheus"} 4.0',
        "l3ha_weights_measured_timestamp_seconds 1.7e+09",
        "l3ha_weights_read_errors_total 1.0",
    ):
        assert line in text, line


def test_the_watch_cycle_reads_measured_weights_on_their_own_period_and_exports_them(
    emulator: Emulator, tmp_path: Path
) -> None:
    from dataclasses import replace

    from prometheus_client import generate_latest

    from l3ha.daemon.settings import load_settings
    from l3ha.daemon.watch import Parts, Watcher
    from l3ha.journal import Journal

    settings = replace(
        load_settings(None, [], default_files=()),
        state_dir=tmp_path / "state",
        dry_run=True,
        metrics_port=0,
        weights_interval=60.0,
    )
    clock = ManualClock()
    cloud = connect()
    weigher = Weigher(MeasureOptions(busy_ports=3), cloud, WeightPolicy(), interval=60.0,
                      clock=clock, warn=pytest.fail)  # fmt: skip
    metrics = WatchMetrics("t")
    with Journal(settings.state_dir) as journal:
        watcher = Watcher(Parts(settings, cloud, journal, clock, metrics=metrics, weigher=weigher))
        for _ in range(3):
            watcher.cycle()
            clock.advance(10.0)
        assert weigher.refreshes == 1
        clock.advance(30.0)
        watcher.cycle()
        assert weigher.refreshes == 2
    routers = list(emulator.world.routers.values())
    by_ports = sum(1 for r in routers if r.interfaces >= 3 and not r.tags)
    text = generate_latest(metrics.registry).decode()
    assert f'l3ha_routers_by_weight_source{{source="ports"}} {by_ports}.0' in text
    assert f'l3ha_routers_by_weight{{weight="10-19"}} {by_ports + 2}.0' in text
    assert "l3ha_weights_read_errors_total 0.0" in text
