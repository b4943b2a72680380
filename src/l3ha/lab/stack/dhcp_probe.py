"""A DHCPDISCOVER from a VM, and the offer that answers it. I/O: one UDP socket; packets pure.

Run inside a VM namespace (``python -m l3ha.lab.stack.dhcp_probe DEVICE MAC
TIMEOUT``): it broadcasts one DHCPDISCOVER for MAC out of DEVICE (broadcast
flag set, so the offer comes back as a broadcast), waits up to TIMEOUT seconds
for the DHCPOFFER with its transaction id and prints the offered address and the
server that offered it (``169.254.3.10 169.254.3.100``); exit 1 if none came.
Only the fields the lab needs are built and read.
"""

from __future__ import annotations

import os
import socket
import struct
import sys
import time
from dataclasses import dataclass

MAGIC = bytes([99, 130, 83, 99])
DISCOVER, OFFER = 1, 2
OPTION_TYPE, OPTION_SERVER, OPTION_END = 53, 54, 255
HEADER = struct.Struct("!BBBBIHH4s4s4s4s16s64s128s")
BROADCAST_FLAG = 0x8000
SO_NO_CHECK = 11  # Linux: send UDP checksum 0 (veth offload would leave it unfinished)


@dataclass(frozen=True)
class Offer:
    """What a DHCP server offered."""

    address: str
    server: str


def mac_bytes(mac: str) -> bytes:
    return bytes(int(part, 16) for part in mac.split(":"))


def discover_packet(mac: str, xid: int) -> bytes:
    """A BOOTREQUEST carrying DHCPDISCOVER for ``mac``. Pure."""
    zero = bytes(4)
    header = HEADER.pack(1, 1, 6, 0, xid, 0, BROADCAST_FLAG, zero, zero, zero, zero,
                         mac_bytes(mac).ljust(16, b"\0"), bytes(64), bytes(128))  # fmt: skip
    options = bytes([OPTION_TYPE, 1, DISCOVER, OPTION_END])
    return (header + MAGIC + options).ljust(300, b"\0")


def parse_options(raw: bytes) -> dict[int, bytes]:
    """DHCP options (code -> value) until END. Pure."""
    options: dict[int, bytes] = {}
    at = 0
    while at < len(raw) and raw[at] != OPTION_END:
        if raw[at] == 0:  # pad
            at += 1
            continue
        if at + 1 >= len(raw):
            break
        length = raw[at + 1]
        options[raw[at]] = raw[at + 2 : at + 2 + length]
        at += 2 + length
    return options


def parse_offer(packet: bytes, mac: str, xid: int) -> Offer | None:
    """The offer in ``packet`` if it is a DHCPOFFER answering ``xid`` for ``mac``. Pure."""
    if len(packet) < HEADER.size + len(MAGIC):
        return None
    fields = HEADER.unpack_from(packet)
    op, got_xid, yiaddr, chaddr = fields[0], fields[4], fields[8], fields[11]
    if op != 2 or got_xid != xid or chaddr[:6] != mac_bytes(mac):
        return None
    if packet[HEADER.size : HEADER.size + 4] != MAGIC:
        return None
    options = parse_options(packet[HEADER.size + 4 :])
    if options.get(OPTION_TYPE) != bytes([OFFER]) or len(options.get(OPTION_SERVER, b"")) != 4:
        return None
    return Offer(socket.inet_ntoa(yiaddr), socket.inet_ntoa(options[OPTION_SERVER]))


def discover(device: str, mac: str, timeout: float) -> Offer | None:
    """Broadcast one DHCPDISCOVER out of ``device``; the first matching offer, or None."""
    xid = int.from_bytes(os.urandom(4), "big")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, device.encode())
        sock.setsockopt(socket.SOL_SOCKET, SO_NO_CHECK, 1)
        sock.bind(("", 68))
        sock.sendto(discover_packet(mac, xid), ("255.255.255.255", 67))
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            try:
                packet = sock.recv(4096)
            except TimeoutError:
                return None
            offer = parse_offer(packet, mac, xid)
            if offer is not None:
                return offer
    return None


def main(argv: list[str]) -> int:
    device, mac, timeout = argv
    offer = discover(device, mac, float(timeout))
    if offer is None:
        print(f"no DHCP offer for {mac} on {device} within {timeout} s", file=sys.stderr)
        return 1
    print(offer.address, offer.server)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
