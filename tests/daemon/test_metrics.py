"""WatchMetrics as Prometheus sees it: scraped over real HTTP from 127.0.0.1 and parsed."""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from l3ha import __version__
from l3ha.daemon.metrics import MetricsServer, WatchMetrics, start_metrics_server
from l3ha.errors import BadInputError

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture
def served() -> Iterator[tuple[WatchMetrics, MetricsServer]]:
    metrics = WatchMetrics(member_id="ctl-1")
    server = start_metrics_server(0, metrics=metrics)
    yield metrics, server
    server.stop()


def scrape(server: MetricsServer) -> Samples:
    with urllib.request.urlopen(server.url, timeout=5) as answer:
        assert answer.status == 200
        text = answer.read().decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def test_port_zero_binds_a_free_loopback_port(served: tuple[WatchMetrics, MetricsServer]) -> None:
    _, server = served
    assert server.host == "127.0.0.1" and server.port > 0
    assert server.url == f"http://127.0.0.1:{server.port}/metrics"


def test_fresh_daemon_exports_every_metric_with_safe_zeroes(
    served: tuple[WatchMetrics, MetricsServer],
) -> None:
    samples = scrape(served[1])
    assert value(samples, "l3ha_leader") == 0
    assert value(samples, "l3ha_gate_halted") == 0
    assert value(samples, "l3ha_unhosted_routers") == 0
    assert value(samples, "l3ha_agents", verdict="dead") == 0
    assert value(samples, "l3ha_agents", verdict="partitioned") == 0
    assert value(samples, "l3ha_gate_halt_reason", reason="control_plane_suspect") == 0
    assert value(samples, "l3ha_info", version=__version__, member="ctl-1") == 1


def test_loop_updates_are_visible_in_a_scrape(served: tuple[WatchMetrics, MetricsServer]) -> None:
    metrics, server = served
    metrics.set_agents_by_verdict({"alive": 4, "dead": 1})
    metrics.set_routers_per_agent({"net-1": (40, 3), "net-2": (38, 2)})
    metrics.unhosted.set(2)
    metrics.count_move("agent_dead", "done")
    metrics.count_move("agent_dead", "done")
    metrics.count_move("agent_dead", "failed")
    metrics.set_gate(True, "az_outage")
    metrics.cycle.observe(0.3)
    metrics.cycle.observe(4.0)
    metrics.leader.set(1)
    metrics.api_errors.labels(kind="unreachable").inc()
    metrics.last_good_cycle.set(1_770_000_000.5)
    metrics.set_partitioned(["net-3"])
    s = scrape(server)
    assert value(s, "l3ha_agents", verdict="alive") == 4
    assert value(s, "l3ha_agents", verdict="dead") == 1
    assert value(s, "l3ha_agents", verdict="suspect") == 0
    assert value(s, "l3ha_agent_routers", host="net-1") == 40
    assert value(s, "l3ha_agent_busy_routers", host="net-2") == 2
    assert value(s, "l3ha_unhosted_routers") == 2
    assert value(s, "l3ha_moves_total", reason="agent_dead", outcome="done") == 2
    assert value(s, "l3ha_moves_total", reason="agent_dead", outcome="failed") == 1
    assert value(s, "l3ha_gate_halted") == 1
    assert value(s, "l3ha_gate_halt_reason", reason="az_outage") == 1
    assert value(s, "l3ha_gate_halt_reason", reason="control_plane_suspect") == 0
    assert value(s, "l3ha_cycle_duration_seconds_count") == 2
    assert value(s, "l3ha_cycle_duration_seconds_sum") == pytest.approx(4.3)
    assert value(s, "l3ha_cycle_duration_seconds_bucket", le="0.5") == 1
    assert value(s, "l3ha_leader") == 1
    assert value(s, "l3ha_api_errors_total", kind="unreachable") == 1
    assert value(s, "l3ha_last_good_cycle_timestamp_seconds") == 1_770_000_000.5
    assert value(s, "l3ha_agent_partitioned", host="net-3") == 1
    assert value(s, "l3ha_partitioned_agents") == 1


def test_gone_hosts_disappear_and_an_open_gate_clears_every_reason(
    served: tuple[WatchMetrics, MetricsServer],
) -> None:
    metrics, server = served
    metrics.set_routers_per_agent({"net-1": (1, 0), "net-2": (2, 1)})
    metrics.set_partitioned(["net-1", "net-2"])
    metrics.set_gate(True, "clock_jump")  # a reason l3ha's enum may not list yet
    metrics.set_routers_per_agent({"net-2": (3, 1)})
    metrics.set_partitioned([])
    metrics.set_gate(False, "")
    s = scrape(server)
    assert ("l3ha_agent_routers", frozenset({("host", "net-1")})) not in s
    assert value(s, "l3ha_agent_routers", host="net-2") == 3
    assert not any(name == "l3ha_agent_partitioned" for name, _ in s)
    assert value(s, "l3ha_partitioned_agents") == 0
    assert value(s, "l3ha_gate_halt_reason", reason="clock_jump") == 0
    assert value(s, "l3ha_gate_halted") == 0


def test_two_instances_in_one_process_do_not_collide_nor_touch_the_global_registry() -> None:
    first, second = WatchMetrics(), WatchMetrics()
    first.unhosted.set(7)
    assert second.registry.get_sample_value("l3ha_unhosted_routers") == 0
    assert REGISTRY.get_sample_value("l3ha_unhosted_routers") is None


def test_a_port_in_use_is_a_one_line_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(BadInputError, match=rf"cannot serve metrics on 127\.0\.0\.1:{port}"):
            start_metrics_server(port, metrics=WatchMetrics())
