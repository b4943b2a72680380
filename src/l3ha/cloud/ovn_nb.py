"""Where OVN hosts each router's gateway, read from the northbound database. I/O: a socket to
ovsdb-server.

OVN (23.09 and later; the column is not in 23.03) writes the chassis that really hosts a
distributed gateway port into ``Logical_Router_Port.status:hosting-chassis``: the chassis
*name*, which is the id Neutron gives that chassis' gateway agent. Neutron names a router's
gateway port ``lrp-<gateway port id>``. ``NorthboundReader.hosting`` reads every router
port's status in one OVSDB ``transact`` (RFC 7047: JSON-RPC over a stream, replies not
delimited) and closes the connection; nothing is ever written. The operator gives the
address (``--ovn-nb unix:PATH`` or ``tcp:IP:PORT``); SSL is not supported.
"""

from __future__ import annotations

import ipaddress
import json
import socket
from dataclasses import dataclass
from typing import Any

from l3ha.errors import BadInputError, CloudError, UnreachableError

NB_DATABASE = "OVN_Northbound"
HOSTING_KEY = "hosting-chassis"
TIMEOUT_S = 5.0
CHUNK = 65536


@dataclass(frozen=True)
class NbAddress:
    """An ovsdb-server address: a unix socket path, or a TCP host and port."""

    path: str = ""
    host: str = ""
    port: int = 0

    def __str__(self) -> str:
        return f"unix:{self.path}" if self.path else f"tcp:{self.host}:{self.port}"


def parse_nb_address(text: str) -> NbAddress:
    """``unix:PATH`` or ``tcp:IP:PORT`` (an IPv6 address in brackets); a one-line
    BadInputError otherwise."""
    kind, _, rest = text.strip().partition(":")
    if kind == "unix" and rest:
        return NbAddress(path=rest)
    if kind == "tcp":
        host, _, port = rest.rpartition(":")
        host = host.removeprefix("[").removesuffix("]")
        try:
            ipaddress.ip_address(host)
            number = int(port)
        except ValueError:
            number = 0
        if 0 < number < 65536:
            return NbAddress(host=host, port=number)
    raise BadInputError(
        f"northbound database {text!r} is not 'unix:PATH' or 'tcp:IP:PORT' (ssl: is not supported)"
    )


class NorthboundReader:
    """Reads ``hosting-chassis`` of every router port (see the module docstring)."""

    def __init__(self, address: NbAddress, timeout: float = TIMEOUT_S) -> None:
        self.address = address
        self.timeout = timeout

    def hosting(self) -> dict[str, str]:
        """Router port name -> the chassis name hosting it ("" where none is)."""
        request = {
            "method": "transact",
            "params": [
                NB_DATABASE,
                {
                    "op": "select",
                    "table": "Logical_Router_Port",
                    "where": [],
                    "columns": ["name", "status"],
                },
            ],
            "id": 1,
        }
        reply = self._call(request)
        if reply.get("error") is not None:
            raise CloudError(f"northbound database {self.address}: {reply['error']}")
        (result,) = reply["result"]
        if "error" in result:
            detail = result.get("details") or result["error"]
            if "status" in str(detail):
                raise CloudError(
                    f"northbound database {self.address} has no Logical_Router_Port status "
                    "(hosting-chassis needs OVN 23.09 or later): drop --ovn-nb"
                )
            raise CloudError(f"northbound database {self.address}: {detail}")
        return {str(row["name"]): _hosting_of(row.get("status")) for row in result["rows"]}

    def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            with self._connect() as sock:
                sock.sendall(json.dumps(request).encode())
                return _read_reply(sock, request["id"])
        except TimeoutError:
            raise UnreachableError(
                f"northbound database {self.address}: no answer within {self.timeout:g} s"
            ) from None
        except OSError as exc:
            raise UnreachableError(
                f"northbound database {self.address}: {exc.strerror or exc}"
            ) from None

    def _connect(self) -> socket.socket:
        address = self.address
        if address.path:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(self.timeout)
            try:
                sock.connect(address.path)
            except OSError:
                sock.close()
                raise
            return sock
        return socket.create_connection((address.host, address.port), self.timeout)


def _read_reply(sock: socket.socket, request_id: int) -> dict[str, Any]:
    """The reply to ``request_id`` (messages are back to back; others are skipped)."""
    decoder = json.JSONDecoder()
    buffer = ""
    while True:
        data = sock.recv(CHUNK)
        if not data:
            raise CloudError("the northbound database closed the connection before answering")
        buffer += data.decode()
        while buffer.strip():
            try:
                message, end = decoder.raw_decode(buffer.lstrip())
            except ValueError:
                break  # incomplete: read more
            buffer = buffer.lstrip()[end:]
            if isinstance(message, dict) and message.get("id") == request_id:
                return message


def _hosting_of(status: object) -> str:
    """``hosting-chassis`` from an OVSDB map value ``["map", [[key, value], ...]]``."""
    if isinstance(status, list) and len(status) == 2 and status[0] == "map":
        for key, value in status[1]:
            if key == HOSTING_KEY:
                return str(value)
    return ""
