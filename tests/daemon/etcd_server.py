"""A throwaway etcd on 127.0.0.1 for the leader tests. I/O: a child process, ports, a dir."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ETCD_BINARY = "/usr/bin/etcd"
START_TIMEOUT = 15.0


def etcd_binary() -> str | None:
    """The etcd binary (Debian's etcd-server), or None when it is not installed."""
    if Path(ETCD_BINARY).exists():
        return ETCD_BINARY
    return shutil.which("etcd")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class EtcdServer:
    """One running etcd; ``url(lock_timeout)`` is a tooz URL for it."""

    process: subprocess.Popen[bytes]
    client_port: int
    data_dir: Path

    def url(self, lock_timeout: int = 3) -> str:
        return f"etcd3+http://127.0.0.1:{self.client_port}?lock_timeout={lock_timeout}"

    def stop(self) -> None:
        """SIGKILL etcd and wait for it (idempotent)."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/version", timeout=0.5) as answer:
            return answer.status == 200
    except OSError:
        return False


def start_etcd(binary: str, data_dir: Path, attempts: int = 3) -> EtcdServer:
    """Start etcd on free loopback ports; retry when a port was taken meanwhile."""
    for _ in range(attempts):
        client, peer = free_port(), free_port()
        log = (data_dir / "etcd.log").open("ab")
        process = subprocess.Popen(
            [
                binary,
                "--name",
                "l3ha-test",
                "--data-dir",
                str(data_dir / "data"),
                "--listen-client-urls",
                f"http://127.0.0.1:{client}",
                "--advertise-client-urls",
                f"http://127.0.0.1:{client}",
                "--listen-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-cluster",
                f"l3ha-test=http://127.0.0.1:{peer}",
                "--listen-metrics-urls",
                "",
            ],
            stdout=log,
            stderr=log,
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline and process.poll() is None:
            if _ready(client):
                return EtcdServer(process, client, data_dir)
            time.sleep(0.05)
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
        shutil.rmtree(data_dir / "data", ignore_errors=True)
    tail = (data_dir / "etcd.log").read_text(errors="replace")[-2000:]
    raise RuntimeError(f"etcd did not start on 127.0.0.1 after {attempts} attempts:\n{tail}")
