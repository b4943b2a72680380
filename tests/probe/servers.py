"""Test helpers: local servers that fail on command, namespaces, and a probe run in a thread.

I/O: sockets on 127.0.0.1 or inside namespaces the tests create (``l3ha-pr-``
prefix), ``ip`` commands, threads.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from dnslib import QTYPE, RR, A, DNSRecord

from l3ha.probe.runner import Probe, ProbeConfig, ProbeResult

CLONE_NEWNET = 0x40000000
PREFIX = "l3ha-pr-"
OWNED = re.compile(rf"^{re.escape(PREFIX)}(\d+)-")
"""Test namespaces are named ``l3ha-pr-<pid of the pytest process>-...``."""


# --- namespaces ------------------------------------------------------------------------


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


def enter_netns(name: str | None) -> None:
    """Move the calling thread into namespace ``name`` (network namespaces are per thread)."""
    if name is None:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {name}")
    finally:
        os.close(fd)


def timed(action: Callable[[], None]) -> tuple[float, float]:
    """Run ``action``; return when it began and ended on the monotonic clock (the change it
    makes takes effect somewhere in between)."""
    before = time.monotonic()
    action()
    return before, time.monotonic()


def owned_name(tag: str) -> str:
    """A namespace name that says which pytest process made it (see ``sweep_namespaces``)."""
    return f"{PREFIX}{os.getpid()}-{tag}"


def namespaces() -> list[str]:
    listed = subprocess.run(
        ["ip", "netns", "list"], capture_output=True, text=True, check=True, timeout=10
    )
    return [line.split()[0] for line in listed.stdout.splitlines() if line.strip()]


def _pytest_running(pid: int) -> bool:
    try:
        return b"pytest" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def leftover_namespaces(include_own: bool) -> list[str]:
    """Test namespaces whose pytest process is gone (and this process's, if asked)."""
    found = []
    for name in namespaces():
        owned = OWNED.match(name)
        if owned is None:
            continue  # not a test namespace of this form (e.g. the benchmark's)
        pid = int(owned[1])
        if (pid == os.getpid() and include_own) or (
            pid != os.getpid() and not _pytest_running(pid)
        ):
            found.append(name)
    return found


def kill_processes_in(name: str) -> None:
    listed = subprocess.run(
        ["ip", "netns", "pids", name], capture_output=True, text=True, check=False, timeout=10
    )
    for word in listed.stdout.split():
        pid = int(word)
        if pid not in (1, os.getpid()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def sweep_namespaces(include_own: bool) -> list[str]:
    """Kill the processes in, and delete, leftover test namespaces; return their names.

    Namespaces of another pytest run still going are left alone.
    """
    swept = leftover_namespaces(include_own)
    for name in swept:
        kill_processes_in(name)
        subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False, timeout=10)
    return swept


@contextlib.contextmanager
def veth_pair(tag: str, subnet: str) -> Iterator[dict[str, str]]:
    """Client and target namespaces joined by a veth pair; ``subnet`` like ``169.254.71``."""
    client, target = owned_name(f"{tag}-c"), owned_name(f"{tag}-t")
    vc, vt = f"l3pr{tag}c", f"l3pr{tag}t"
    for ns in (client, target):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
    try:
        ip("netns", "add", client)
        ip("netns", "add", target)
        ip("-n", client, "link", "add", vc, "type", "veth", "peer", "name", vt, "netns", target)
        ip("-n", client, "addr", "add", f"{subnet}.1/24", "dev", vc)
        ip("-n", target, "addr", "add", f"{subnet}.2/24", "dev", vt)
        for ns, dev in ((client, vc), (target, vt)):
            ip("-n", ns, "link", "set", dev, "up")
            ip("-n", ns, "link", "set", "lo", "up")
        yield {
            "client": client,
            "target": target,
            "client_dev": vc,
            "target_dev": vt,
            "client_addr": f"{subnet}.1",
            "target_addr": f"{subnet}.2",
        }
    finally:
        for ns in (client, target):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


# --- TCP ---------------------------------------------------------------------------------


class TcpListener:
    """Accepts and closes connections on (host, port) until stopped; can be restarted."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, netns: str | None = None) -> None:
        self.host, self.port, self.netns = host, port, netns
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    def start(self) -> TcpListener:
        self._ready.clear()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        if not self._ready.wait(5):
            raise RuntimeError("listener did not start")
        return self

    def _serve(self) -> None:
        enter_netns(self.netns)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        sock.listen(512)
        self.port = sock.getsockname()[1]
        self._sock = sock
        self._ready.set()
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            conn.close()

    def stop(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        if self._thread is not None:
            self._thread.join(5)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


# --- HTTP --------------------------------------------------------------------------------


class HungHttpServer:
    """Listens on 127.0.0.1 but never accepts: connects complete, requests never get an answer."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(512)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/"

    def __enter__(self) -> HungHttpServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()


class FlakyHttpServer:
    """Answers 200, or 503 while ``failing`` is set."""

    def __init__(self) -> None:
        self.failing = False
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                code = 503 if outer.failing else 200
                body = b"down\n" if outer.failing else b"ok\n"
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/health"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FlakyHttpServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


# --- DNS ---------------------------------------------------------------------------------


class FlakyDnsServer:
    """Answers A queries with 127.0.0.1, or stays silent while ``silent`` is set."""

    def __init__(self) -> None:
        self.silent = False
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                data, peer = self.sock.recvfrom(4096)
            except OSError:
                continue
            if self.silent:
                continue
            query = DNSRecord.parse(data)
            reply = query.reply()
            reply.add_answer(RR(query.q.qname, QTYPE.A, rdata=A("127.0.0.1"), ttl=5))
            self.sock.sendto(reply.pack(), peer)

    def __enter__(self) -> FlakyDnsServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


# --- a probe in a thread -----------------------------------------------------------------


class ProbeThread:
    """Runs a probe in a thread (optionally inside a namespace) and keeps its result."""

    def __init__(self, config: ProbeConfig, netns: str | None = None, **kwargs: Any) -> None:
        self.config, self.netns, self.kwargs = config, netns, kwargs
        self.result: ProbeResult | None = None
        self.error: BaseException | None = None
        self.probe: Probe | None = None
        self._built = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            enter_netns(self.netns)
            self.probe = Probe(self.config, **self.kwargs)
            self._built.set()
            self.result = self.probe.run()
        except BaseException as exc:
            self.error = exc
            self._built.set()

    def start(self) -> ProbeThread:
        self._thread.start()
        self._built.wait(10)
        if self.error:
            raise self.error
        return self

    def wait_started(self) -> None:
        """Until the grid's origin has passed."""
        assert self.probe is not None
        deadline = time.monotonic() + 5
        while not (0 < self.probe.origin < time.monotonic()) and time.monotonic() < deadline:
            time.sleep(0.005)

    def join(self, timeout: float = 30) -> ProbeResult:
        self._thread.join(timeout)
        if self.error:
            raise self.error
        assert self.result is not None, "probe did not finish"
        return self.result
