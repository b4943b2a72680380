"""The data-plane probe against real loopback sockets: who answers, who does not, in what time.

On loopback every address in 127/8 exists, so a closed port is *refused* at
once; a black hole (SYNs dropped) is built honestly from a listener whose
accept queue is full. Both count as no answer, a completed handshake as one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
import time
from collections.abc import Iterator

import pytest
from tests.daemon.norights import needs_root_tools, run_without_raw_sockets

from l3ha.daemon.dataplane import (
    ProbeSpec,
    ensure_probe_possible,
    parse_probe_spec,
    probe_gateways,
)
from l3ha.errors import BadInputError
from l3ha.probe.targets import TargetKind


class Loopback:
    """Sockets on 127.0.0.x sharing one port, as the emulator's gateway listeners do."""

    def __init__(self) -> None:
        self.port = 0
        self._sockets: list[socket.socket] = []

    def listen(self, address: str) -> str:
        """A listener that completes handshakes (into its accept queue)."""
        self._bind(address).listen(64)
        return address

    def black_hole(self, address: str) -> str:
        """A listener whose accept queue is full: the kernel drops further SYNs."""
        server = self._bind(address)
        server.listen(0)
        filler = socket.create_connection((address, self.port), timeout=2)
        self._sockets.append(filler)
        probe = socket.socket()
        probe.settimeout(0.2)
        with contextlib.suppress(TimeoutError), probe:
            probe.connect((address, self.port))
            pytest.fail(f"{address}: the full accept queue still completed a handshake")
        return address

    def _bind(self, address: str) -> socket.socket:
        server = socket.socket()
        server.bind((address, self.port))
        self.port = server.getsockname()[1]
        self._sockets.append(server)
        return server

    def close(self) -> None:
        for sock in self._sockets:
            sock.close()


@pytest.fixture
def loopback() -> Iterator[Loopback]:
    where = Loopback()
    yield where
    where.close()


def tcp(where: Loopback) -> ProbeSpec:
    return parse_probe_spec(f"tcp:{where.port}")


# --- the spec ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("tcp:9697", ProbeSpec(TargetKind.TCP, 9697)),
        (" TCP:1 ", ProbeSpec(TargetKind.TCP, 1)),
        ("tcp:65535", ProbeSpec(TargetKind.TCP, 65535)),
        ("icmp", ProbeSpec(TargetKind.ICMP)),
        ("ICMP", ProbeSpec(TargetKind.ICMP)),
    ],
)
def test_probe_spec_parses_and_prints_back(text: str, spec: ProbeSpec) -> None:
    assert parse_probe_spec(text) == spec
    assert parse_probe_spec(str(spec)) == spec


@pytest.mark.parametrize(
    "text", ["", "tcp", "tcp:", "tcp:0", "tcp:65536", "tcp:http", "udp:53", "icmp:1", "ping"]
)
def test_malformed_probe_spec_is_one_line_bad_input(text: str) -> None:
    with pytest.raises(BadInputError) as raised:
        parse_probe_spec(text)
    assert "\n" not in str(raised.value)
    assert repr(text) in str(raised.value)


# --- TCP -----------------------------------------------------------------------------


def test_completed_handshake_answers_refused_and_black_hole_do_not(loopback: Loopback) -> None:
    up = loopback.listen("127.0.0.2")
    also_up = loopback.listen("127.0.0.3")
    hole = loopback.black_hole("127.0.0.4")
    refused = "127.0.0.5"  # nothing listens there: the kernel answers RST
    answered = probe_gateways(tcp(loopback), [hole, up, refused, also_up], timeout=0.3)
    assert answered == [up, also_up]


def test_refused_connection_is_not_an_answer(loopback: Loopback) -> None:
    loopback.listen("127.0.0.2")
    started = time.monotonic()
    assert probe_gateways(tcp(loopback), ["127.0.0.6", "127.0.0.7"], timeout=2.0) == []
    assert time.monotonic() - started < 1.0  # refusals are immediate, no timeout waited


def test_each_address_is_probed_once_and_kept_in_order(loopback: Loopback) -> None:
    b = loopback.listen("127.0.0.9")
    a = loopback.listen("127.0.0.8")
    assert probe_gateways(tcp(loopback), [b, a, b, "127.0.0.10", a], timeout=0.5) == [b, a]


def test_overall_deadline_bounds_the_call(loopback: Loopback) -> None:
    holes = [loopback.black_hole(f"127.0.1.{i}") for i in range(1, 6)]
    started = time.monotonic()
    assert probe_gateways(tcp(loopback), holes, timeout=10.0, deadline=0.5) == []
    assert time.monotonic() - started < 1.5


def test_concurrency_bound_queues_probes_but_late_ones_still_answer(loopback: Loopback) -> None:
    holes = [loopback.black_hole(f"127.0.2.{i}") for i in range(1, 5)]
    up = loopback.listen("127.0.2.9")
    addresses = [*holes, up]
    started = time.monotonic()
    assert probe_gateways(tcp(loopback), addresses, 0.3, deadline=3, concurrency=2) == [up]
    queued = time.monotonic() - started
    started = time.monotonic()
    assert probe_gateways(tcp(loopback), addresses, 0.3, deadline=3, concurrency=8) == [up]
    parallel = time.monotonic() - started
    assert queued >= 0.55  # two rounds of time-outs before the listener's turn
    assert parallel < queued


def test_deadline_cuts_off_probes_still_waiting_for_a_slot(loopback: Loopback) -> None:
    holes = [loopback.black_hole(f"127.0.3.{i}") for i in range(1, 3)]
    up = loopback.listen("127.0.3.9")
    answered = probe_gateways(tcp(loopback), [*holes, up], timeout=1.0, deadline=0.4, concurrency=2)
    assert answered == []  # the listener never got a slot before the deadline


def test_works_from_inside_a_running_event_loop(loopback: Loopback) -> None:
    up = loopback.listen("127.0.0.11")

    async def caller() -> list[str]:
        return probe_gateways(tcp(loopback), [up, "127.0.0.12"], timeout=0.5)

    assert asyncio.run(caller()) == [up]


def test_no_addresses_no_probe() -> None:
    assert probe_gateways(ProbeSpec(TargetKind.TCP, 1), []) == []


@pytest.mark.parametrize("address", ["gw.example", "127.0.0.256", "", "10.0.0.1:80"])
def test_address_that_is_not_an_ip_is_refused_without_resolving(address: str) -> None:
    with pytest.raises(BadInputError, match="not an IP address"):
        probe_gateways(ProbeSpec(TargetKind.TCP, 1), [address])


def test_one_string_instead_of_a_list_is_refused() -> None:
    with pytest.raises(BadInputError, match="not one string"):
        probe_gateways(ProbeSpec(TargetKind.TCP, 1), "127.0.0.1")


@pytest.mark.parametrize(
    "bounds", [{"timeout": 0}, {"timeout": float("nan")}, {"deadline": -1}, {"concurrency": 0}]
)
def test_bad_bounds_are_bad_input(bounds: dict[str, float]) -> None:
    with pytest.raises(BadInputError):
        probe_gateways(ProbeSpec(TargetKind.TCP, 1), ["127.0.0.1"], **bounds)  # type: ignore[arg-type]


# --- ICMP ----------------------------------------------------------------------------

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="raw ICMP sockets need root")


@needs_root
def test_icmp_echo_from_loopback_addresses_answers() -> None:
    spec = parse_probe_spec("icmp")
    ensure_probe_possible(spec)
    addresses = ["127.0.0.1", "127.0.0.2", "127.0.4.7"]
    assert probe_gateways(spec, addresses, timeout=1.0) == addresses


CHILD = """
import socket, sys
from l3ha.daemon.dataplane import ensure_probe_possible, parse_probe_spec, probe_gateways
from l3ha.errors import BadInputError
from tests.daemon.norights import needs_root_tools, run_without_raw_sockets

listener = socket.create_server(("127.0.0.1", 0))
tcp = parse_probe_spec(f"tcp:{listener.getsockname()[1]}")
ensure_probe_possible(tcp)
print("tcp", probe_gateways(tcp, ["127.0.0.1"], timeout=2.0))
try:
    ensure_probe_possible(parse_probe_spec("icmp"))
    print("icmp possible")
except BadInputError as err:
    print("icmp refused:", err)
"""


@needs_root_tools
def test_tcp_probe_needs_no_rights_where_icmp_is_refused() -> None:
    """Without CAP_NET_RAW or unprivileged ICMP, the TCP probe still starts and answers,
    and the ICMP probe is refused at start-up with one line."""
    result = run_without_raw_sockets([sys.executable, "-c", CHILD])
    assert result.returncode == 0, result.stderr
    tcp_line, icmp_line = result.stdout.splitlines()
    assert tcp_line == "tcp ['127.0.0.1']"
    assert icmp_line.startswith("icmp refused: cannot open an ICMP socket")
