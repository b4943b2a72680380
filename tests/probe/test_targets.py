"""Parsing targets from options and targets files; bad input is one clear error."""

from __future__ import annotations

import pytest

from l3ha.errors import BadInputError
from l3ha.probe.targets import (
    TargetKind,
    check_unique,
    nameserver_from_resolv_conf,
    parse_target,
    parse_targets_text,
)


def test_each_kind_parses_with_and_without_label() -> None:
    tcp = parse_target("tcp", "api=127.0.0.1:9696")
    assert (tcp.kind, tcp.label, tcp.host, tcp.port, tcp.name) == (
        TargetKind.TCP,
        "api",
        "127.0.0.1",
        9696,
        "tcp api",
    )
    http = parse_target("http", "https://127.0.0.1:5000/v3?x=1")
    assert (http.scheme, http.host, http.port, http.path) == ("https", "127.0.0.1", 5000, "/v3?x=1")
    assert http.label == "https://127.0.0.1:5000/v3?x=1"
    assert parse_target("http", "http://h/").port == 80
    assert parse_target("icmp", "::1").host == "::1"
    dns = parse_target("dns", "example.org@127.0.0.1:5353")
    assert (dns.qname, dns.host, dns.port) == ("example.org", "127.0.0.1", 5353)
    assert parse_target("dns", "example.org", "192.0.2.53").port == 53
    assert parse_target("tcp", "[::1]:22").host == "::1"


@pytest.mark.parametrize(
    ("kind", "spec", "message"),
    [
        ("tcp", "127.0.0.1", "is not HOST:PORT"),
        ("tcp", "127.0.0.1:70000", "out of range"),
        ("icmp", "gateway", "is not an IP address"),
        ("http", "ftp://x/", "is not an http"),
        ("dns", "bad name@127.0.0.1", "is not a DNS name"),
        ("dns", "example.org@resolver:53", "is not an IP address"),
        ("dns", "example.org", "names no server"),
        ("smtp", "x:25", "unknown target kind"),
    ],
)
def test_bad_targets_are_refused(kind: str, spec: str, message: str) -> None:
    with pytest.raises(BadInputError, match=message):
        parse_target(kind, spec)


def test_targets_file_lines_with_labels_and_comments() -> None:
    text = "# switchover\ntcp 127.0.0.1:22 ssh\n\nicmp 127.0.0.1  # loopback\n"
    targets = parse_targets_text(text, "t.txt")
    assert [t.name for t in targets] == ["tcp ssh", "icmp 127.0.0.1"]


def test_targets_file_error_names_file_and_line() -> None:
    with pytest.raises(BadInputError, match=r"^t.txt:2: tcp target"):
        parse_targets_text("icmp 127.0.0.1\ntcp nowhere\n", "t.txt")


def test_duplicate_targets_are_refused() -> None:
    with pytest.raises(BadInputError, match="given twice"):
        check_unique([parse_target("tcp", "127.0.0.1:1"), parse_target("tcp", "127.0.0.1:1")])


def test_nameserver_from_resolv_conf() -> None:
    assert nameserver_from_resolv_conf("search x\nnameserver 192.0.2.1\n") == "192.0.2.1"
    assert nameserver_from_resolv_conf("") is None
