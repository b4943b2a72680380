"""A node's link to the broker: a TCP relay from 127.0.0.1 inside its namespace. I/O: sockets.

    python -m l3ha.lab.stack.relay NAMESPACE LISTEN_PORT TARGET_PORT

Listens on 127.0.0.1:LISTEN_PORT inside network namespace NAMESPACE and relays
each connection to 127.0.0.1:TARGET_PORT of the namespace it was started in
(the machine's, where RabbitMQ listens), so agents in a node namespace reach
the broker while no service binds to anything but loopback. Killing the relay
cuts the node's control-plane link; a connection whose other side closes is
closed too (the broker stopping drops every agent's connection).

``relay_into`` starts one as a process and waits until it accepts: l3ha run inside the
client namespace, where routers' gateways answer its data-plane probe, reaches the
Neutron API so.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import subprocess
import sys
import threading
import time

CLONE_NEWNET = 0x40000000
CHUNK = 65536


def listen_in(namespace: str, port: int) -> socket.socket:
    """A listening socket on 127.0.0.1:``port`` inside ``namespace``; we stay where we were."""
    libc = ctypes.CDLL(None, use_errno=True)
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{namespace}", os.O_RDONLY)
    try:
        if libc.setns(target, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {namespace}")
        try:
            server = socket.socket()
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("127.0.0.1", port))
            server.listen(128)
        finally:
            if libc.setns(home, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns back")
    finally:
        os.close(home)
        os.close(target)
    return server


def pump(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(CHUNK):
            sink.sendall(data)
    for sock in (source, sink):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def serve(server: socket.socket, target_port: int) -> None:
    while True:
        client, _ = server.accept()
        try:
            upstream = socket.create_connection(("127.0.0.1", target_port), timeout=5)
        except OSError:
            client.close()
            continue
        upstream.settimeout(None)
        for source, sink in ((client, upstream), (upstream, client)):
            threading.Thread(target=pump, args=(source, sink), daemon=True).start()


def relay_into(namespace: str, port: int, timeout: float = 20.0) -> subprocess.Popen[bytes]:
    """A relay process from 127.0.0.1:``port`` inside ``namespace`` (its loopback brought up)
    to 127.0.0.1:``port`` here, once a connection through it succeeds."""
    subprocess.run(["ip", "-n", namespace, "link", "set", "lo", "up"], check=True)
    relay = subprocess.Popen([sys.executable, "-m", "l3ha.lab.stack.relay", namespace,
                              str(port), str(port)])  # fmt: skip
    connect = f"import socket; socket.create_connection(('127.0.0.1', {port}), 1).close()"
    check = ["ip", "netns", "exec", namespace, sys.executable, "-c", connect]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if subprocess.run(check, capture_output=True, check=False).returncode == 0:
            return relay
        time.sleep(0.2)
    relay.kill()
    relay.wait()
    raise OSError(f"127.0.0.1:{port} not reachable through the relay into {namespace}")


def main() -> None:
    namespace, listen_port, target_port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    serve(listen_in(namespace, listen_port), target_port)


if __name__ == "__main__":
    main()
