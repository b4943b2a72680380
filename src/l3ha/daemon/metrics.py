"""Prometheus metrics of ``l3ha watch``. I/O: an HTTP server thread on a local port (when started).

Every metric lives on the ``WatchMetrics`` instance's own ``CollectorRegistry``
(never prometheus_client's global one), so two daemons in one test process, or a
second ``WatchMetrics``, never collide. The watch loop sets the metrics themselves, or
through the ``set_*`` / ``count_*`` methods that keep track of their labels;
``start_metrics_server`` serves the registry on ``http://HOST:PORT/metrics`` (any path
answers, as prometheus_client does).

Metric names (the alert rules in ``contrib/l3ha-alerts.yml`` use them):

==============================================  =========  ===========================
name                                            type       labels
==============================================  =========  ===========================
l3ha_agents                                     gauge      verdict
l3ha_agent_routers                              gauge      host
l3ha_agent_busy_routers                         gauge      host
l3ha_agent_partitioned                          gauge      host
l3ha_partitioned_agents                         gauge
l3ha_unhosted_routers                           gauge
l3ha_moves_total                                counter    reason, outcome
l3ha_gate_halted                                gauge
l3ha_gate_halt_reason                           gauge      reason
l3ha_cycle_duration_seconds                     histogram
l3ha_leader                                     gauge
l3ha_api_errors_total                           counter    kind
l3ha_last_good_cycle_timestamp_seconds          gauge
l3ha_info                                       gauge      version, member
l3ha_routers_by_weight                          gauge      weight (1, 2-4, 5-9, ...)
l3ha_routers_by_weight_source                   gauge      source
l3ha_weights_measured_timestamp_seconds         gauge
l3ha_weights_read_errors_total                  counter
==============================================  =========  ===========================

``l3ha_routers_by_weight`` is the weight distribution: routers per weight
range (``WEIGHT_RANGES``); ``l3ha_routers_by_weight_source`` says where the
weights came from (file, tag, ports, fips, prometheus, default).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from l3ha import __version__
from l3ha.errors import BadInputError
from l3ha.health import Verdict
from l3ha.model import HaltReason

#: Lower bounds of the weight ranges of ``l3ha_routers_by_weight`` (the last is open).
WEIGHT_RANGES = (1, 2, 5, 10, 20, 50, 100)
CYCLE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)


class WatchMetrics:
    """The daemon's metrics on a private registry; every method is thread-safe."""

    def __init__(self, member_id: str = "") -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = CollectorRegistry(auto_describe=True)
        self._lock = threading.Lock()

        def gauge(name: str, doc: str, *labels: str) -> Any:
            return Gauge(name, doc, labels, registry=self.registry)

        def counter(name: str, doc: str, *labels: str) -> Any:
            return Counter(name, doc, labels, registry=self.registry)

        self.agents = gauge("l3ha_agents", "L3 agents by l3ha's own verdict", "verdict")
        self.agent_routers = gauge(
            "l3ha_agent_routers", "Routers bound to the agent on this host", "host"
        )
        self.agent_busy_routers = gauge(
            "l3ha_agent_busy_routers",
            "Busy (high-weight) routers bound to the agent on this host",
            "host",
        )
        self.agent_partitioned = gauge(
            "l3ha_agent_partitioned",
            "1 when the agent's heartbeat is stale but its data plane still answers",
            "host",
        )
        self.partitioned_agents = gauge(
            "l3ha_partitioned_agents",
            "Agents whose heartbeat is stale but whose data plane still answers",
        )
        self.unhosted = gauge("l3ha_unhosted_routers", "Routers bound to no L3 agent at all")
        self.moves = counter(
            "l3ha_moves", "Router moves attempted, by reason and outcome", "reason", "outcome"
        )
        self.gate_halted = gauge(
            "l3ha_gate_halted", "1 while a fleet safety gate halts every automatic move"
        )
        self.gate_reason = gauge(
            "l3ha_gate_halt_reason",
            "1 for the reason the fleet gate halts moves now, 0 for the others",
            "reason",
        )
        self.cycle = Histogram(
            "l3ha_cycle_duration_seconds",
            "Duration of one watch cycle (observe, judge, plan, act, verify)",
            buckets=CYCLE_BUCKETS,
            registry=self.registry,
        )
        self.leader = gauge("l3ha_leader", "1 while this instance holds the leader lock and acts")
        self.api_errors = counter(
            "l3ha_api_errors", "Failed Neutron API calls, by kind of error", "kind"
        )
        self.last_good_cycle = gauge(
            "l3ha_last_good_cycle_timestamp_seconds",
            "Unix time at which the last cycle on a fresh, complete snapshot ended",
        )
        self.info = gauge(
            "l3ha_info", "Always 1; labels name the l3ha version and member id", "version", "member"
        )
        self.info.labels(version=__version__, member=member_id).set(1)
        self.routers_by_weight = gauge(
            "l3ha_routers_by_weight",
            "Routers whose weight lies in the range (the weight distribution)",
            "weight",
        )
        self.routers_by_weight_source = gauge(
            "l3ha_routers_by_weight_source",
            "Routers by where their weight came from (file, tag, ports, fips, prometheus, default)",
            "source",
        )
        self.weights_measured = gauge(
            "l3ha_weights_measured_timestamp_seconds",
            "Unix time of the last reading of the measured weights (ports, fips, prometheus)",
        )
        self.weights_read_errors = counter(
            "l3ha_weights_read_errors",
            "Readings of a measured weight source that failed (a warning; others still apply)",
        )
        self._hosts: set[str] = set()
        self._partitioned_hosts: set[str] = set()
        self._reasons: set[str] = {r.value for r in HaltReason}
        # every verdict is exported at 0 from the start, so alerts see it before it occurs
        self._verdicts: set[str] = {v.value for v in Verdict}
        self.set_agents_by_verdict({})
        self.set_gate(False, "")
        self.leader.set(0)
        self.unhosted.set(0)
        self.set_partitioned(())

    def set_agents_by_verdict(self, counts: Mapping[str, int]) -> None:
        """Agents per verdict; verdicts missing from ``counts`` are 0."""
        with self._lock:
            self._verdicts.update(str(v) for v in counts)
            for verdict in self._verdicts:
                self.agents.labels(verdict=verdict).set(counts.get(verdict, 0))

    def set_routers_per_agent(self, per_host: Mapping[str, tuple[int, int]]) -> None:
        """``host -> (routers, busy routers)``; hosts no longer listed are dropped."""
        with self._lock:
            for host in self._hosts - set(per_host):
                self.agent_routers.remove(host)
                self.agent_busy_routers.remove(host)
            for host, (routers, busy) in per_host.items():
                self.agent_routers.labels(host=host).set(routers)
                self.agent_busy_routers.labels(host=host).set(busy)
            self._hosts = set(per_host)

    def set_weights(self, weights: Iterable[int], sources: Mapping[str, int]) -> None:
        """The weight distribution (every router's weight) and routers per weight source."""
        counts = dict.fromkeys(weight_range_labels(), 0)
        for weight in weights:
            counts[weight_range_label(weight)] += 1
        with self._lock:
            for label, count in counts.items():
                self.routers_by_weight.labels(weight=label).set(count)
            for source, count in sources.items():
                self.routers_by_weight_source.labels(source=source).set(count)

    def weights_measured_at(self, unix_time: float, errors: int) -> None:
        """A reading of the measured weights ended at ``unix_time`` with ``errors`` failures."""
        self.weights_measured.set(unix_time)
        if errors:
            self.weights_read_errors.inc(errors)

    def count_move(self, reason: str, outcome: str, count: int = 1) -> None:
        """``count`` moves attempted for ``reason`` that ended with ``outcome`` (done, ...)."""
        self.moves.labels(reason=str(reason), outcome=str(outcome)).inc(count)

    def set_gate(self, halted: bool, reason: str) -> None:
        """The fleet gate: halted with ``reason``, or open (``reason`` ignored)."""
        with self._lock:
            if halted:
                self._reasons.add(str(reason))
            self.gate_halted.set(1 if halted else 0)
            for known in self._reasons:
                self.gate_reason.labels(reason=known).set(1 if halted and known == reason else 0)

    def set_partitioned(self, hosts: Iterable[str]) -> None:
        """Partitioned agents: their hosts (exported per host and counted)."""
        with self._lock:
            current = set(hosts)
            for host in self._partitioned_hosts - current:
                self.agent_partitioned.remove(host)
            for host in current:
                self.agent_partitioned.labels(host=host).set(1)
            self._partitioned_hosts = current
            self.partitioned_agents.set(len(current))

    def metric_names(self) -> set[str]:
        """Every series name this registry can export (``_total``, ``_bucket`` ... included).

        Derived from each family's type, so labelled counters that have not
        counted anything yet are included too.
        """
        suffixes = {
            "counter": ("_total", "_created"),
            "histogram": ("_bucket", "_sum", "_count", "_created"),
            "summary": ("_sum", "_count", "_created"),
        }
        names: set[str] = set()
        for family in self.registry.collect():
            ends = suffixes.get(family.type, ("",))
            names.update(family.name + end for end in ends)
            names.update(sample.name for sample in family.samples)
        return names


def weight_range_labels() -> list[str]:
    """``["1", "2-4", "5-9", "10-19", "20-49", "50-99", "100+"]``."""
    bounds = WEIGHT_RANGES
    labels = [
        str(low) if high - low == 1 else f"{low}-{high - 1}"
        for low, high in itertools.pairwise(bounds)
    ]
    return [*labels, f"{bounds[-1]}+"]


def weight_range_label(weight: int) -> str:
    """The range label of one weight."""
    labels = weight_range_labels()
    index = sum(1 for low in WEIGHT_RANGES if weight >= low) - 1
    return labels[max(0, index)]


@dataclass
class MetricsServer:
    """A running metrics HTTP server; ``port`` is the port it bound."""

    host: str
    port: int
    _httpd: Any
    _thread: threading.Thread

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def start_metrics_server(
    port: int, host: str = "127.0.0.1", *, metrics: WatchMetrics
) -> MetricsServer:
    """Serve ``metrics`` on ``host:port`` from a daemon thread; port 0 picks a free port.

    A port already in use (or a host not on this machine) is a one-line ``BadInputError``.
    """
    from prometheus_client import start_http_server

    try:
        httpd, thread = start_http_server(port, addr=host, registry=metrics.registry)
    except OSError as exc:
        raise BadInputError(
            f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}"
        ) from exc
    return MetricsServer(host, int(httpd.server_port), httpd, thread)
