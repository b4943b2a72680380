"""Outages induced in network namespaces (as root): address removal and veth link down.

Two namespaces joined by a veth pair (169.254.71.0/24). The probe runs in the
client namespace (in a thread moved there with setns), the TCP listener in the
target namespace.

- Removing the target's address drops packets: the measured window matches the
  induced one within one interval, at 10 ms and at 100 ms, over ICMP and TCP.
- Setting the target's veth down instead *queues* the client's packets, and the
  kernel releases them a little after link up (the peer's carrier returns
  asynchronously, typically 0.1-0.5 s after ``ip link set up`` returns). Every
  sample started within one timeout before that release succeeds late, all at
  the release instant; so the measured window ends one timeout before traffic
  really flowed again, i.e. it is short of the real outage by up to the timeout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from l3ha.probe.runner import ProbeConfig, ProbeResult
from l3ha.probe.samplers import IcmpMode
from l3ha.probe.targets import parse_target

from .servers import ProbeThread, TcpListener, ip, timed, veth_pair

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
    pytest.mark.skipif(shutil.which("ip") is None, reason="iproute2 (ip) is not installed"),
]

PORT = 7001
OUTAGE = 1.0
TOLERANCE = 0.01


@pytest.fixture(scope="module")
def net() -> Iterator[dict[str, str]]:
    with veth_pair("n", "169.254.71") as names:
        listener = TcpListener(names["target_addr"], PORT, netns=names["target"]).start()
        yield names
        listener.stop()


Window = tuple[float, float]


def run_with_outage(
    net: dict[str, str], interval: float, timeout: float, how: str, **kwargs: Any
) -> tuple[ProbeResult, Window, Window]:
    """Run the probe and induce one outage; return when the down and up commands ran."""
    addr, dev, ns = net["target_addr"], net["target_dev"], net["target"]
    targets = (parse_target("icmp", addr), parse_target("tcp", f"{addr}:{PORT}"))
    config = ProbeConfig(
        targets,
        interval=interval,
        timeout=timeout,
        duration=OUTAGE + 1.2,
        keep_samples=True,
        **kwargs,
    )
    probe = ProbeThread(config, netns=net["client"]).start()
    probe.wait_started()
    time.sleep(0.4)
    if how == "addr":
        began = timed(lambda: ip("-n", ns, "addr", "del", f"{addr}/24", "dev", dev))
        time.sleep(OUTAGE)
        ended = timed(lambda: ip("-n", ns, "addr", "add", f"{addr}/24", "dev", dev))
    else:
        began = timed(lambda: ip("-n", ns, "link", "set", dev, "down"))
        time.sleep(OUTAGE)
        ended = timed(lambda: ip("-n", ns, "link", "set", dev, "up"))
    return probe.join(), began, ended


@pytest.mark.parametrize("interval", [0.01, 0.1])
def test_address_removal_is_measured_within_one_interval(
    net: dict[str, str], interval: float
) -> None:
    result, began, ended = run_with_outage(net, interval, 0.3, "addr")
    slack = interval + TOLERANCE
    for tracker in result.trackers:
        [outage] = tracker.all_outages()
        assert outage.end is not None, tracker.target
        assert began[0] - TOLERANCE <= outage.start <= began[1] + slack, tracker.target
        assert ended[0] - TOLERANCE <= outage.end <= ended[1] + slack, tracker.target
        measured = outage.end - outage.start
        assert ended[0] - began[1] - slack <= measured <= ended[1] - began[0] + slack
        assert outage.reason == "timeout"


def released_at(result: ProbeResult, target: str, after: float) -> float:
    """When traffic flowed again: the first completion of a successful sample started after
    ``after`` (the start of the measured outage)."""
    return min(
        s.start + s.elapsed
        for s in result.samples
        if s.target == target and s.ok and s.start > after
    )


def test_link_down_queues_packets_and_the_window_measures_short(net: dict[str, str]) -> None:
    interval, timeout = 0.02, 0.3
    result, began, ended = run_with_outage(net, interval, timeout, "link")
    for tracker in result.trackers:
        [outage] = tracker.all_outages()
        assert outage.end is not None
        assert began[0] - TOLERANCE <= outage.start <= began[1] + interval + TOLERANCE
        release = released_at(result, tracker.target, outage.start)
        assert release >= ended[0] - TOLERANCE  # nothing flows before the link is up again
        late = [
            s
            for s in result.samples
            if s.target == tracker.target
            and s.ok
            and s.start < release - 2 * interval
            and abs(s.start + s.elapsed - release) < 0.02
        ]
        # samples that started before recovery were held back and succeeded late, together
        assert len(late) >= 2, tracker.target
        assert tracker.slow_successes >= 1
        # so the window ends before traffic really flowed, short by up to the timeout
        assert release - timeout - interval - TOLERANCE <= outage.end <= release - 2 * interval


def test_unprivileged_icmp_socket_where_the_namespace_allows_it(net: dict[str, str]) -> None:
    subprocess.run(
        [
            "ip",
            "netns",
            "exec",
            net["client"],
            "sysctl",
            "-qw",
            "net.ipv4.ping_group_range=0 2147483647",
        ],
        check=True,
        timeout=10,
    )
    config = ProbeConfig(
        (parse_target("icmp", net["target_addr"]),),
        interval=0.05,
        timeout=0.2,
        duration=0.5,
        icmp_mode=IcmpMode.DGRAM,
    )
    result = ProbeThread(config, netns=net["client"]).start().join()
    assert result.trackers[0].samples == 10
    assert result.trackers[0].failed == 0
