"""Real traffic on 127.0.0.1: HTTP 503 windows, a TCP listener stopped and restarted, a DNS
server that goes silent, ICMP to loopback, markers over the unix socket, hung samples."""

from __future__ import annotations

import io
import itertools
import math
import os
import time
from pathlib import Path
from typing import Any

import pytest

from l3ha.errors import BadInputError
from l3ha.probe.live import CLEAR, LiveView
from l3ha.probe.marks import send_mark
from l3ha.probe.runner import Probe, ProbeConfig, ProbeResult
from l3ha.probe.samplers import IcmpMode
from l3ha.probe.targets import Target, parse_target

from .servers import FlakyDnsServer, FlakyHttpServer, ProbeThread, TcpListener, timed

INTERVAL = 0.02
TOLERANCE = 0.02
OUTAGE = 0.5


def config(*targets: Target, duration: float = 1.4, **kwargs: Any) -> ProbeConfig:
    return ProbeConfig(tuple(targets), interval=INTERVAL, timeout=0.2, duration=duration, **kwargs)


def only_outage(result: ProbeResult, index: int = 0) -> dict[str, Any]:
    block = result.trackers[index].summary(result.origin, result.until)
    assert block["outage_count"] == 1, block["outages"]
    outage: dict[str, Any] = block["outages"][0]
    outage["abs_start"] = result.origin + outage["start_s"]
    outage["abs_end"] = result.origin + outage["end_s"]
    return outage


def assert_matches(
    outage: dict[str, Any], began: tuple[float, float], ended: tuple[float, float]
) -> None:
    """The measured window lies within one interval (plus tolerance) of the induced one."""
    assert began[0] - TOLERANCE <= outage["abs_start"] <= began[1] + INTERVAL + TOLERANCE
    assert ended[0] - TOLERANCE <= outage["abs_end"] <= ended[1] + INTERVAL + TOLERANCE
    shortest, longest = ended[0] - began[1], ended[1] - began[0]
    assert shortest - INTERVAL - TOLERANCE <= outage["duration_s"]
    assert outage["duration_s"] <= longest + INTERVAL + TOLERANCE


def induce(probe: ProbeThread, down: Any, up: Any) -> tuple[tuple[float, float], ...]:
    probe.wait_started()
    time.sleep(0.3)
    began = timed(down)
    time.sleep(OUTAGE)
    return began, timed(up)


def test_http_503_window_is_measured() -> None:
    with FlakyHttpServer() as server:
        probe = ProbeThread(config(parse_target("http", f"api={server.url}"))).start()
        began, ended = induce(
            probe,
            lambda: setattr(server, "failing", True),
            lambda: setattr(server, "failing", False),
        )
        result = probe.join()
    outage = only_outage(result)
    assert outage["reason"] == "HTTP 503"
    assert_matches(outage, began, ended)


def test_http_ok_range_decides_what_is_up() -> None:
    with FlakyHttpServer() as server:
        server.failing = True
        target = parse_target("http", server.url)
        probe = ProbeThread(config(target, duration=0.3, http_ok=(200, 503))).start()
        result = probe.join()
    assert result.trackers[0].failed == 0 and result.trackers[0].samples >= 10


def test_tcp_listener_stopped_and_restarted_is_measured() -> None:
    listener = TcpListener().start()
    probe = ProbeThread(config(parse_target("tcp", listener.address))).start()
    began, ended = induce(probe, listener.stop, listener.start)
    result = probe.join()
    listener.stop()
    outage = only_outage(result)
    assert outage["reason"] == "connection refused"
    assert_matches(outage, began, ended)


def test_silent_dns_server_is_measured() -> None:
    with FlakyDnsServer() as server:
        target = parse_target("dns", f"example.org@{server.address}")
        probe = ProbeThread(config(target)).start()
        began, ended = induce(
            probe, lambda: setattr(server, "silent", True), lambda: setattr(server, "silent", False)
        )
        result = probe.join()
    outage = only_outage(result)
    assert outage["reason"] == "timeout"
    assert_matches(outage, began, ended)


def test_dns_refused_port_is_down_with_reason() -> None:
    with FlakyDnsServer() as server:
        address = server.address
    result = (
        ProbeThread(config(parse_target("dns", f"x.org@{address}"), duration=0.2)).start().join()
    )
    block = result.trackers[0].summary(result.origin, result.until)
    assert block["loss_pct"] == 100.0
    assert block["outages"][0]["reason"] == "connection refused"


def test_hung_samples_never_delay_the_next_ones() -> None:
    """A DNS server that never answers: every sample hangs 0.2 s (ten intervals), yet the
    next samples start on the grid, while the earlier ones are still waiting."""
    with FlakyDnsServer() as server:
        server.silent = True
        target = parse_target("dns", f"x.org@{server.address}")
        result = ProbeThread(config(target, duration=1.0, keep_samples=True)).start().join()
    assert result.trackers[0].samples + result.grid.skipped == 50
    assert result.trackers[0].samples >= 40
    ordered = sorted(result.samples, key=lambda s: s.seq)
    assert all(s.elapsed >= 0.19 for s in ordered)
    overlapping = [b for a, b in itertools.pairwise(ordered) if b.start < a.start + a.elapsed]
    assert len(overlapping) >= 35
    lateness = sorted(result.lateness)
    assert lateness[len(lateness) // 2] < 0.01


@pytest.mark.skipif(os.geteuid() != 0, reason="raw ICMP sockets need root")
def test_icmp_to_loopback_answers() -> None:
    result = ProbeThread(config(parse_target("icmp", "127.0.0.1"), duration=0.3)).start().join()
    tracker = result.trackers[0]
    assert tracker.samples + result.grid.skipped == 15
    assert tracker.samples >= 10 and tracker.failed == 0


def test_marker_sent_over_the_socket_lands_in_the_events(tmp_path: Path) -> None:
    sock = tmp_path / "probe.sock"
    listener = TcpListener().start()
    cfg = config(parse_target("tcp", listener.address), duration=1.0, mark_sockets=(sock,))
    probe = ProbeThread(cfg).start()
    probe.wait_started()
    deadline = time.monotonic() + 2
    while not sock.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    sent_at = time.monotonic()
    offset = send_mark(sock, "upgrade starts")
    result = probe.join()
    listener.stop()
    [event] = result.events
    assert (event.source, event.text) == ("mark", "upgrade starts")
    assert offset == pytest.approx(sent_at - result.origin, abs=0.05)
    assert not sock.exists()


def test_live_view_draws_targets_and_changes() -> None:
    listener = TcpListener().start()
    refused = TcpListener().start()
    refused.stop()
    screen = io.StringIO()
    targets = (parse_target("tcp", f"up={listener.address}"), parse_target("tcp", refused.address))
    ProbeThread(config(*targets, duration=1.2), observers=[LiveView(screen)]).start().join()
    listener.stop()
    last = screen.getvalue().split(CLEAR)[-1]
    assert screen.getvalue().count(CLEAR) >= 2
    assert f"tcp {refused.address}" in last and "DOWN" in last
    assert "tcp up" in last and "UP" in last
    assert f"tcp {refused.address}: DOWN (connection refused)" in last


def test_config_refuses_nonsense() -> None:
    target = parse_target("tcp", "127.0.0.1:1")
    with pytest.raises(BadInputError, match="interval must be a finite number greater than 0"):
        ProbeConfig((target,), interval=0)
    with pytest.raises(BadInputError, match="timeout must be a finite number greater than 0"):
        ProbeConfig((target,), timeout=math.inf)
    with pytest.raises(BadInputError, match=r"duration 0\.5 s is shorter than the interval 1 s"):
        ProbeConfig((target,), interval=1.0, duration=0.5)
    with pytest.raises(BadInputError, match="at least one target"):
        ProbeConfig(())


def _ping_group_allows_us() -> bool:
    low, high = Path("/proc/sys/net/ipv4/ping_group_range").read_text().split()
    return int(low) <= os.getgid() <= int(high)


@pytest.mark.skipif(_ping_group_allows_us(), reason="unprivileged ICMP is allowed here")
def test_icmp_without_permission_is_a_clear_error() -> None:
    cfg = ProbeConfig((parse_target("icmp", "127.0.0.1"),), icmp_mode=IcmpMode.DGRAM)
    with pytest.raises(BadInputError, match=r"sysctl net\.ipv4\.ping_group_range="):
        Probe(cfg)
