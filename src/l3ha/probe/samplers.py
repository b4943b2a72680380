"""One attempt per target kind (ICMP echo, TCP connect, HTTP status, DNS answer). I/O: network.

Every sampler is a coroutine that returns on success and raises ``SampleError``
with a short operator-facing reason otherwise; the scheduler enforces the
timeout and stamps the times. Addresses are resolved once, when the samplers
are built, so a sample never waits for a resolver.

ICMP uses one shared socket per address family: a raw socket as root, else an
unprivileged ``SOCK_DGRAM`` ICMP socket where ``net.ipv4.ping_group_range``
allows it, else a clear error. Replies are matched by address and sequence
number (and, on raw sockets, by identifier and a per-process token).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import itertools
import os
import secrets
import socket
import ssl
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from l3ha.errors import BadInputError
from l3ha.probe.targets import Target, TargetKind

Attempt = Callable[[], Awaitable[None]]


class SampleError(Exception):
    """A sample's target did not answer as required; the message is the reason."""


class IcmpMode(StrEnum):
    """Which kind of ICMP socket to use."""

    AUTO = "auto"
    RAW = "raw"
    DGRAM = "dgram"


def reason_of(exc: OSError) -> str:
    """``connection refused``, ``no route to host`` ... from an OSError."""
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, ConnectionResetError):
        return "connection reset"
    if exc.errno is not None:
        return os.strerror(exc.errno).lower()
    return str(exc) or type(exc).__name__


@dataclass(frozen=True, slots=True)
class Resolved:
    """A target's address as the socket calls want it."""

    family: socket.AddressFamily
    sockaddr: tuple[str, int] | tuple[str, int, int, int]


def resolve(host: str, port: int, kind: socket.SocketKind) -> Resolved:
    """Resolve once at start-up; a name that does not resolve is bad input."""
    try:
        infos = socket.getaddrinfo(host, port, type=kind)
    except OSError as exc:
        raise BadInputError(f"cannot resolve {host!r}: {exc}") from None
    family, _, _, _, sockaddr = infos[0]
    return Resolved(family, sockaddr)  # type: ignore[arg-type]


# --- TCP ---------------------------------------------------------------------------


def tcp_attempt(target: Target) -> Attempt:
    """Up when a TCP connect completes. The socket is then reset (SO_LINGER 0), so
    a thousand samples a second leave no TIME_WAIT sockets behind."""
    where = resolve(target.host, target.port, socket.SOCK_STREAM)
    linger = struct.pack("ii", 1, 0)

    async def attempt() -> None:
        loop = asyncio.get_running_loop()
        sock = socket.socket(where.family, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
            await loop.sock_connect(sock, where.sockaddr)
        except OSError as exc:
            raise SampleError(reason_of(exc)) from None
        finally:
            sock.close()

    return attempt


# --- HTTP --------------------------------------------------------------------------


def http_attempt(target: Target, ok: tuple[int, int]) -> Attempt:
    """Up when the status line arrives and its code lies in ``ok`` (inclusive)."""
    where = resolve(target.host, target.port, socket.SOCK_STREAM)
    context = ssl.create_default_context() if target.scheme == "https" else None
    host_header = target.host if ":" not in target.host else f"[{target.host}]"
    default_port = 443 if target.scheme == "https" else 80
    if target.port != default_port:
        host_header += f":{target.port}"
    request = (
        f"GET {target.path} HTTP/1.1\r\nHost: {host_header}\r\n"
        "User-Agent: l3ha-probe\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    ).encode()

    async def attempt() -> None:
        try:
            reader, writer = await asyncio.open_connection(
                where.sockaddr[0],
                where.sockaddr[1],
                ssl=context,
                server_hostname=target.host if context else None,
            )
        except ssl.SSLError as exc:
            raise SampleError(f"TLS: {exc.reason or exc}") from None
        except OSError as exc:
            raise SampleError(reason_of(exc)) from None
        try:
            writer.write(request)
            status = _status_code(await reader.readline())
        except OSError as exc:
            raise SampleError(reason_of(exc)) from None
        finally:
            writer.transport.abort()
        if not ok[0] <= status <= ok[1]:
            raise SampleError(f"HTTP {status}")

    return attempt


def _status_code(line: bytes) -> int:
    parts = line.split()
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        raise SampleError("no HTTP status line" if not line else "bad HTTP status line")
    return int(parts[1])


# --- DNS ---------------------------------------------------------------------------


def dns_attempt(target: Target) -> Attempt:
    """Up when the server answers our query (same id) with NOERROR and at least
    one answer record; other rcodes and empty answers are down with that reason."""
    from dnslib import QTYPE, RCODE, DNSRecord

    where = resolve(target.host, target.port, socket.SOCK_DGRAM)

    async def attempt() -> None:
        loop = asyncio.get_running_loop()
        query = DNSRecord.question(target.qname, "A")
        sock = socket.socket(where.family, socket.SOCK_DGRAM)
        try:
            sock.setblocking(False)
            sock.connect(where.sockaddr)
            await loop.sock_sendall(sock, query.pack())
            reply = await _matching_reply(loop, sock, query.header.id, DNSRecord)
        except OSError as exc:
            raise SampleError(reason_of(exc)) from None
        finally:
            sock.close()
        if reply.header.rcode != RCODE.NOERROR:
            raise SampleError(f"rcode {RCODE.get(reply.header.rcode)}")
        if not any(rr.rtype in (QTYPE.A, QTYPE.CNAME) for rr in reply.rr):
            raise SampleError("no answer")

    return attempt


async def _matching_reply(
    loop: asyncio.AbstractEventLoop, sock: socket.socket, query_id: int, record: Any
) -> Any:
    while True:
        data = await loop.sock_recv(sock, 65535)
        try:
            reply = record.parse(data)
        except Exception:  # dnslib raises its own error types on garbage
            continue
        if reply.header.id == query_id:
            return reply


# --- ICMP --------------------------------------------------------------------------


ECHO_REQUEST = {socket.AF_INET: 8, socket.AF_INET6: 128}
ECHO_REPLY = {socket.AF_INET: 0, socket.AF_INET6: 129}
UNREACHABLE = {3: "destination unreachable", 11: "time exceeded"}


def checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071)."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return int(~total & 0xFFFF)


def echo_request(family: socket.AddressFamily, ident: int, seq: int, token: bytes) -> bytes:
    """An ICMP(v6) echo request; the v6 checksum is left to the kernel."""
    header = struct.pack("!BBHHH", ECHO_REQUEST[family], 0, 0, ident, seq)
    if family == socket.AF_INET6:
        return header + token
    return struct.pack("!BBHHH", 8, 0, checksum(header + token), ident, seq) + token


class IcmpEngine:
    """Shared ICMP sockets (one per family) and the replies they are waiting for."""

    def __init__(self, mode: IcmpMode = IcmpMode.AUTO) -> None:
        self._mode = mode
        self._sockets: dict[socket.AddressFamily, tuple[socket.socket, bool]] = {}
        self._waiting: dict[tuple[str, int], asyncio.Future[None]] = {}
        self._ident = os.getpid() & 0xFFFF
        self._token = secrets.token_bytes(8)
        self._seq = itertools.count()
        self._watched: set[socket.AddressFamily] = set()

    def open(self, family: socket.AddressFamily) -> None:
        """Open the socket for ``family`` now, so a permission problem shows at start-up."""
        if family not in self._sockets:
            self._sockets[family] = _open_icmp(family, self._mode)

    def close(self) -> None:
        for sock, _ in self._sockets.values():
            with contextlib.suppress(RuntimeError):
                asyncio.get_running_loop().remove_reader(sock.fileno())
            sock.close()
        self._sockets.clear()
        self._watched.clear()

    def attempt(self, target: Target) -> Attempt:
        """Up when an echo reply from the target's address arrives."""
        address = target.host
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        self.open(family)

        async def attempt() -> None:
            await self._ping(family, address)

        return attempt

    async def _ping(self, family: socket.AddressFamily, address: str) -> None:
        loop = asyncio.get_running_loop()
        sock = self._sockets[family][0]
        self._watch(loop, family)
        seq = next(self._seq) & 0xFFFF
        key = (address, seq)
        future: asyncio.Future[None] = loop.create_future()
        self._waiting[key] = future
        try:
            sock.sendto(echo_request(family, self._ident, seq, self._token), (address, 0))
            await future
        except OSError as exc:
            raise SampleError(reason_of(exc)) from None
        finally:
            self._waiting.pop(key, None)

    def _watch(self, loop: asyncio.AbstractEventLoop, family: socket.AddressFamily) -> None:
        if family not in self._watched:
            loop.add_reader(self._sockets[family][0].fileno(), self._readable, family)
            self._watched.add(family)

    def _readable(self, family: socket.AddressFamily) -> None:
        sock, raw = self._sockets[family]
        while True:
            try:
                data, peer = sock.recvfrom(65535)
            except OSError:  # drained (BlockingIOError) or a socket error
                return
            self._dispatch(family, raw, data, peer[0])

    def _dispatch(self, family: socket.AddressFamily, raw: bool, data: bytes, peer: str) -> None:
        if raw and family == socket.AF_INET:
            data = data[(data[0] & 0x0F) * 4 :]
        if len(data) < 8:
            return
        kind, _, _, ident, seq = struct.unpack("!BBHHH", data[:8])
        if kind == ECHO_REPLY[family]:
            if raw and (ident != self._ident or data[8:16] != self._token):
                return
            self._settle((peer, seq), None)
        elif raw and family == socket.AF_INET and kind in UNREACHABLE:
            self._icmp_error(data, UNREACHABLE[kind])

    def _icmp_error(self, data: bytes, reason: str) -> None:
        inner = data[8:]
        if len(inner) < 20:
            return
        inner_icmp = inner[(inner[0] & 0x0F) * 4 :]
        if len(inner_icmp) < 8:
            return
        _, _, _, ident, seq = struct.unpack("!BBHHH", inner_icmp[:8])
        if ident == self._ident:
            self._settle((socket.inet_ntoa(inner[16:20]), seq), SampleError(reason))

    def _settle(self, key: tuple[str, int], error: Exception | None) -> None:
        future = self._waiting.get(key)
        if future is None or future.done():
            return
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)


def _open_icmp(family: socket.AddressFamily, mode: IcmpMode) -> tuple[socket.socket, bool]:
    proto = socket.IPPROTO_ICMP if family == socket.AF_INET else socket.IPPROTO_ICMPV6
    if mode is IcmpMode.RAW or (mode is IcmpMode.AUTO and os.geteuid() == 0):
        try:
            return _nonblocking(socket.socket(family, socket.SOCK_RAW, proto)), True
        except PermissionError:
            if mode is IcmpMode.RAW:
                raise BadInputError("ICMP raw sockets need root (or CAP_NET_RAW)") from None
    try:
        return _nonblocking(socket.socket(family, socket.SOCK_DGRAM, proto)), False
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EPERM):
            raise
    raise BadInputError(
        "cannot open an ICMP socket: run as root, or allow unprivileged ICMP with "
        f"sysctl net.ipv4.ping_group_range='{os.getgid()} {os.getgid()}'"
    )


def _nonblocking(sock: socket.socket) -> socket.socket:
    sock.setblocking(False)
    return sock


def build_attempt(target: Target, icmp: IcmpEngine, http_ok: tuple[int, int]) -> Attempt:
    """The sampler for one target."""
    if target.kind is TargetKind.ICMP:
        return icmp.attempt(target)
    if target.kind is TargetKind.TCP:
        return tcp_attempt(target)
    if target.kind is TargetKind.HTTP:
        return http_attempt(target, http_ok)
    return dns_attempt(target)
