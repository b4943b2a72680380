"""What the probe samples: target kinds, their specs and labels, parsed from text. Pure.

Each target is given as ``[LABEL=]SPEC`` on the command line (``--tcp
api=127.0.0.1:9696``) or as a line ``KIND SPEC [LABEL]`` in a targets file.
Malformed specs raise ``BadInputError`` with one line naming the problem.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, replace
from enum import StrEnum
from urllib.parse import urlsplit

from l3ha.errors import BadInputError

_LABEL = re.compile(r"^([A-Za-z0-9_.-]+)=(.+)$")
DNS_PORT = 53


class TargetKind(StrEnum):
    """How a target is sampled."""

    ICMP = "icmp"
    TCP = "tcp"
    HTTP = "http"
    DNS = "dns"


@dataclass(frozen=True, slots=True)
class Target:
    """One thing to sample. ``host``/``port`` are the address to reach; ``path``,
    ``scheme`` are for HTTP; ``qname`` is the name a DNS target asks for."""

    kind: TargetKind
    label: str
    host: str
    port: int = 0
    scheme: str = ""
    path: str = ""
    qname: str = ""

    @property
    def name(self) -> str:
        """``KIND LABEL``, as the timeline and the report show it."""
        return f"{self.kind} {self.label}"


def split_label(text: str) -> tuple[str | None, str]:
    """``keystone=https://k:5000/`` -> (``keystone``, ``https://k:5000/``)."""
    match = _LABEL.match(text.strip())
    if match:
        return match.group(1), match.group(2)
    return None, text.strip()


def _host_port(text: str, what: str) -> tuple[str, int]:
    """Split ``HOST:PORT`` or ``[V6]:PORT``; the port must be 1..65535."""
    match = re.fullmatch(r"\[([^\]]+)\]:(\d+)|([^:\[\]]+):(\d+)", text)
    if not match:
        raise BadInputError(f"{what} {text!r} is not HOST:PORT")
    host = match.group(1) or match.group(3)
    port = int(match.group(2) or match.group(4))
    if not 0 < port < 65536:
        raise BadInputError(f"{what} {text!r}: port {port} is out of range 1-65535")
    return host, port


def parse_icmp(spec: str) -> Target:
    """An ICMP target: an IPv4 or IPv6 address (names are not resolved on each sample)."""
    try:
        address = ipaddress.ip_address(spec)
    except ValueError:
        raise BadInputError(f"icmp target {spec!r} is not an IP address") from None
    return Target(TargetKind.ICMP, str(address), str(address))


def parse_tcp(spec: str) -> Target:
    """A TCP target: ``HOST:PORT``; up when a connect completes."""
    host, port = _host_port(spec, "tcp target")
    return Target(TargetKind.TCP, spec, host, port)


def parse_http(spec: str) -> Target:
    """An HTTP(S) target: a URL with scheme http or https."""
    parts = urlsplit(spec)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadInputError(f"http target {spec!r} is not an http:// or https:// URL")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise BadInputError(f"http target {spec!r} has a bad port") from None
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Target(TargetKind.HTTP, spec, parts.hostname, port, parts.scheme, path)


def parse_dns(spec: str, default_server: str | None = None) -> Target:
    """A DNS target: ``NAME[@SERVER[:PORT]]``; the server defaults to ``default_server``."""
    name, _, server = spec.partition("@")
    if not name or not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise BadInputError(f"dns target {spec!r}: {name!r} is not a DNS name")
    server = server or default_server or ""
    if not server:
        raise BadInputError(f"dns target {spec!r} names no server and none is configured")
    host, port = _dns_server(server, spec)
    return Target(TargetKind.DNS, spec, host, port, qname=name)


def _dns_server(server: str, spec: str) -> tuple[str, int]:
    try:
        return str(ipaddress.ip_address(server.strip("[]"))), DNS_PORT
    except ValueError:
        pass
    host, port = _host_port(server, f"dns target {spec!r} server")
    try:
        return str(ipaddress.ip_address(host)), port
    except ValueError:
        raise BadInputError(f"dns target {spec!r}: server {host!r} is not an IP address") from None


PARSERS = {
    TargetKind.ICMP: parse_icmp,
    TargetKind.TCP: parse_tcp,
    TargetKind.HTTP: parse_http,
}


def parse_target(kind: str, text: str, default_dns_server: str | None = None) -> Target:
    """Parse one ``[LABEL=]SPEC`` of the given kind; without a label, the spec labels it."""
    try:
        target_kind = TargetKind(kind.lower())
    except ValueError:
        known = ", ".join(k.value for k in TargetKind)
        raise BadInputError(f"unknown target kind {kind!r}; kinds are: {known}") from None
    label, spec = split_label(text)
    if target_kind is TargetKind.DNS:
        target = parse_dns(spec, default_dns_server)
    else:
        target = PARSERS[target_kind](spec)
    return replace(target, label=label) if label else target


def parse_targets_text(
    text: str, source: str, default_dns_server: str | None = None
) -> list[Target]:
    """Targets from a file's text: ``KIND SPEC [LABEL]`` per line, ``#`` comments."""
    targets = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) not in (2, 3):
            raise BadInputError(f"{source}:{number}: expected 'KIND SPEC [LABEL]', got {line!r}")
        spec = f"{fields[2]}={fields[1]}" if len(fields) == 3 else fields[1]
        try:
            targets.append(parse_target(fields[0], spec, default_dns_server))
        except BadInputError as exc:
            raise BadInputError(f"{source}:{number}: {exc}") from None
    return targets


def check_unique(targets: list[Target]) -> None:
    """Two targets with the same kind and label would share a lane: refuse."""
    seen: set[str] = set()
    for target in targets:
        if target.name in seen:
            raise BadInputError(f"target {target.name!r} is given twice; give one a LABEL=")
        seen.add(target.name)


def nameserver_from_resolv_conf(text: str) -> str | None:
    """The first ``nameserver`` of a resolv.conf text, if any."""
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0] == "nameserver":
            return fields[1]
    return None
