"""The real stack's pure parts: names, addresses, checks, configs, outage windows, DHCP packets.

No root, no processes: these run everywhere.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from l3ha.errors import BadInputError, NotFoundError
from l3ha.lab.stack.configs import StackLayout, dhcp_agent_ini, l3_agent_ini, neutron_conf
from l3ha.lab.stack.dhcp_probe import HEADER, MAGIC, Offer, discover_packet, parse_offer
from l3ha.lab.stack.reach import Reach, dark_windows, parse_replies
from l3ha.lab.stack.scenario import log_line, watch_resumed
from l3ha.lab.stack.spec import Ports, StackSpec, check_host, clouds_yaml, owns_namespace


def test_namespaces_of_the_stack_and_its_agents_are_owned_and_no_others() -> None:
    assert owns_namespace("l3rs-n1")
    assert owns_namespace("qrouter-0d1e@l3rs-n2")
    assert not owns_namespace("qrouter-0d1e")
    assert not owns_namespace("l3ha-lab-main-n1")


def test_hosts_accept_short_names_and_reject_unknown_ones() -> None:
    spec = StackSpec(nodes=2, routers=1)
    assert check_host(spec, "n2") == "l3rs-n2"
    assert check_host(spec, "l3rs-n1") == "l3rs-n1"
    with pytest.raises(NotFoundError, match="n3"):
        check_host(spec, "n3")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"nodes": 0, "routers": 1}, "--nodes"),
        ({"nodes": 9, "routers": 1}, "--nodes"),
        ({"nodes": 2, "routers": 91}, "--routers"),
        ({"nodes": 2, "routers": 1, "ha_routers": 2}, "--ha-routers"),
        ({"nodes": 1, "routers": 1, "ha_routers": 1}, "at least 2 nodes"),
    ],
)
def test_bad_sizes_are_refused_with_the_option_named(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(BadInputError, match=message):
        StackSpec(**kwargs)  # type: ignore[arg-type]


def test_the_last_routers_are_the_ha_ones() -> None:
    spec = StackSpec(nodes=2, routers=3, ha_routers=1)
    assert [spec.is_ha(k) for k in spec.router_indexes] == [False, False, True]


def test_configs_bind_loopback_and_carry_the_stack_timings() -> None:
    spec = StackSpec(nodes=2, routers=1, report_interval=4, agent_down_time=12)
    layout = StackLayout(Path("/run/l3ha/stack"))
    server = neutron_conf(spec, layout, Ports(3306, 5672, 25672, 4369, 9696))
    assert "agent_down_time = 12" in server
    assert "mysql+pymysql://root@127.0.0.1:3306/neutron" in server
    assert "rabbit://guest:guest@127.0.0.1:5672/" in server
    agent = l3_agent_ini(spec, layout, "l3rs-n1", "env PATH=/x")
    assert "report_interval = 4" in agent
    assert "test_namespace_suffix = l3rs-n1" in agent
    assert "ovsdb_connection = unix:/run/l3ha/stack/n1/db.sock" in agent
    assert "http://127.0.0.1:9696/" in clouds_yaml(9696)


def test_dark_windows_are_gaps_longer_than_three_intervals() -> None:
    replies = [10.0, 10.2, 10.4, 15.0, 15.2]

    def flat(windows: tuple[tuple[float, float], ...]) -> list[float]:
        return [edge for window in windows for edge in window]

    assert flat(dark_windows(replies, 10.0, 15.3, 0.2)) == pytest.approx([10.6, 15.0])
    assert flat(dark_windows(replies, 10.0, 20.0, 0.2)) == pytest.approx([10.6, 15.0, 15.4, 20.0])
    assert flat(dark_windows([], 0.0, 5.0, 0.2)) == pytest.approx([0.2, 5.0])


def test_reach_reports_totals_and_when_the_router_was_back() -> None:
    reach = Reach("r1", 10, ((10.0, 12.0), (20.0, 25.0)))
    assert reach.dark_seconds == pytest.approx(7.0)
    assert reach.longest == pytest.approx(5.0)
    assert reach.back_after(15.0) == pytest.approx(10.0)
    assert Reach("r2", 10, ()).back_after(0.0) is None


def test_ping_output_parses_only_answers() -> None:
    output = (
        "PING 169.254.1.1 (169.254.1.1) 56(84) bytes of data.\n"
        "[1700000000.100000] 64 bytes from 169.254.1.1: icmp_seq=1 ttl=64 time=0.5 ms\n"
        "[1700000000.300000] no answer yet for icmp_seq=2\n"
        "[1700000000.500000] 64 bytes from 169.254.1.1: icmp_seq=3 ttl=64 time=0.4 ms\n"
    )
    assert parse_replies(output) == [1700000000.1, 1700000000.5]


def offer_packet(mac: str, xid: int, message_type: int = 2) -> bytes:
    """A DHCP server's answer offering 169.254.3.10 from 169.254.3.100 (a test double)."""
    zero = bytes(4)
    header = HEADER.pack(2, 1, 6, 0, xid, 0, 0x8000, zero, bytes([169, 254, 3, 10]), zero,
                         zero, bytes.fromhex(mac.replace(":", "")).ljust(16, b"\0"),
                         bytes(64), bytes(128))  # fmt: skip
    options = bytes([53, 1, message_type, 0, 54, 4, 169, 254, 3, 100, 255])
    return header + MAGIC + options


def test_discover_is_a_broadcast_bootrequest_for_the_mac() -> None:
    packet = discover_packet("fa:16:3e:00:00:03", 0x1234ABCD)
    fields = HEADER.unpack_from(packet)
    assert (fields[0], fields[4], fields[6]) == (1, 0x1234ABCD, 0x8000)
    assert fields[11][:6] == bytes.fromhex("fa163e000003")
    assert packet[HEADER.size : HEADER.size + 7] == MAGIC + bytes([53, 1, 1])
    assert len(packet) == 300


def test_only_the_offer_answering_our_request_is_taken() -> None:
    mac = "fa:16:3e:00:00:03"
    assert parse_offer(offer_packet(mac, 7), mac, 7) == Offer("169.254.3.10", "169.254.3.100")
    assert parse_offer(offer_packet(mac, 8), mac, 7) is None  # another transaction
    assert parse_offer(offer_packet("fa:16:3e:00:00:04", 7), mac, 7) is None  # another client
    assert parse_offer(offer_packet(mac, 7, message_type=5), mac, 7) is None  # an ACK
    assert parse_offer(offer_packet(mac, 7)[:100], mac, 7) is None  # truncated


def test_dhcp_agents_suffix_their_namespaces_with_the_host() -> None:
    layout = StackLayout(Path("/run/l3ha/stack"))
    ini = dhcp_agent_ini(StackSpec(nodes=2, routers=1, dhcp=True), layout, "l3rs-n2", "sudo")
    assert "test_namespace_suffix = @l3rs-n2\n" in ini
    assert "interface_driver = openvswitch\n" in ini


WATCH_LOG = """\
2026-12-02T04:09:38.340Z INFO verdict agent=l3rs-n1 agent_id=7 verdict=alive was=observing
2026-12-02T04:09:38.340Z INFO verdict agent=l3rs-n2 agent_id=8 verdict=alive was=observing
2026-12-02T04:09:51.584Z WARNING verdict agent=l3rs-n1 agent_id=7 verdict=suspect was=alive
2026-12-02T04:09:51.584Z WARNING halt reason=control_plane_suspect message="2 of 2 agents missed"
2026-12-02T04:10:26.561Z INFO verdict agent=l3rs-n1 agent_id=7 verdict=alive was=dead
2026-12-02T04:10:41.521Z INFO resumed reason="every gate has cleared"
"""


def test_the_watch_has_resumed_once_its_last_halt_cleared_and_every_agent_is_alive() -> None:
    lines = WATCH_LOG.splitlines(keepends=True)
    assert watch_resumed(WATCH_LOG, ["l3rs-n1", "l3rs-n2"])
    assert not watch_resumed("".join(lines[:5]), ["l3rs-n1", "l3rs-n2"])  # still halted
    assert not watch_resumed(WATCH_LOG, ["l3rs-n1", "l3rs-n3"])  # n3 never judged
    assert not watch_resumed(WATCH_LOG + lines[2], ["l3rs-n1"])  # n1 suspect again
    assert log_line(lines[3]) == (
        "halt",
        {"reason": "control_plane_suspect", "message": "2 of 2 agents missed"},
    )
