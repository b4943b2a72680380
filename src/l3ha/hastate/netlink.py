"""Netlink address events for one VIP on one device. I/O: rtnetlink sockets, network namespaces.

``AddressWatcher`` subscribes to the address multicast groups *before* it dumps
the current addresses, on the same socket, and lets ``DumpOrdering`` decide
which events the dump already reflects, so there is no gap and no reordering.
When the kernel drops events (ENOBUFS) it dumps again. It also follows link
events for the device's name: when the device is deleted the VIP is gone, and
when a device of that name appears again (a new interface index) it watches
the new one and dumps the addresses again. Messages are built and
decoded with pyroute2's rtnetlink classes; the socket itself is a plain one so
the order of messages is exactly the order the kernel queued them.
"""

from __future__ import annotations

import contextlib
import errno
import select
import socket
import threading
from collections.abc import Iterable
from typing import Any

from pyroute2.netlink import NLM_F_DUMP, NLM_F_REQUEST, NLMSG_DONE, NLMSG_ERROR, rtnl
from pyroute2.netlink.rtnl.ifaddrmsg import ifaddrmsg
from pyroute2.netlink.rtnl.ifinfmsg import ifinfmsg
from pyroute2.netlink.rtnl.marshal import MarshalRtnl

from l3ha.errors import NotFoundError, UserError
from l3ha.hastate.vipstate import DumpOrdering, IPInterface, is_vip_event

SOL_NETLINK = 270
NETLINK_ADD_MEMBERSHIP = 1
RECEIVE_BUFFER = 4 * 1024 * 1024
SO_RCVBUFFORCE = 33
DUMP_KICK_SECONDS = 0.02
_ADDRESS_EVENTS = (rtnl.RTM_NEWADDR, rtnl.RTM_DELADDR)
_LINK_EVENTS = (rtnl.RTM_NEWLINK, rtnl.RTM_DELLINK)


def enter_netns(name: str) -> None:
    """Move the calling thread (the whole process when called before any thread starts)."""
    from pyroute2.netns import setns

    try:
        setns(name, flags=0)
    except OSError as exc:
        raise NotFoundError(f"network namespace {name!r} cannot be entered: {exc}") from exc


def netlink_socket(netns: str | None = None) -> socket.socket:
    """A raw rtnetlink socket, created inside ``netns`` (by a short-lived thread) if given."""
    if netns is None:
        return _new_socket()
    box: dict[str, Any] = {}

    def create() -> None:
        try:
            enter_netns(netns)
            box["sock"] = _new_socket()
        except (OSError, UserError) as exc:
            box["error"] = exc

    worker = threading.Thread(target=create, name=f"netns-{netns}")
    worker.start()
    worker.join()
    if "error" in box:
        error = box["error"]
        if isinstance(error, UserError):
            raise error
        raise NotFoundError(f"cannot open a netlink socket in {netns!r}: {error}")
    sock: socket.socket = box["sock"]
    return sock


def _new_socket() -> socket.socket:
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
    try:  # root may exceed net.core.rmem_max; others get what the sysctl allows
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RECEIVE_BUFFER)
    except PermissionError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
    sock.bind((0, 0))
    return sock


class NetlinkDumper:
    """Request/response helper on an rtnetlink socket (dumps only)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.portid: int = sock.getsockname()[0]
        self.marshal = MarshalRtnl()
        self._seq = 0

    def send_dump(self, msg_type: int, family: int) -> int:
        """Send a dump request; return its sequence number."""
        self._seq += 1
        seq = self._seq
        msg: Any = ifaddrmsg() if msg_type == rtnl.RTM_GETADDR else ifinfmsg()
        msg["header"]["type"] = msg_type
        msg["header"]["flags"] = NLM_F_REQUEST | NLM_F_DUMP
        msg["header"]["sequence_number"] = seq
        msg["family"] = family
        msg.encode()
        self.sock.send(msg.data)
        return seq

    def parse(self, data: bytes) -> Iterable[Any]:
        return list(self.marshal.parse(data))

    def is_reply(self, msg: Any, seq: int) -> bool:
        header = msg["header"]
        return bool(header["sequence_number"] == seq and header["pid"] == self.portid)

    def dump(self, msg_type: int, family: int) -> list[Any]:
        """A whole dump, ignoring anything else on the socket (use before subscribing)."""
        seq = self.send_dump(msg_type, family)
        entries: list[Any] = []
        while True:
            for msg in self.parse(self.sock.recv(RECEIVE_BUFFER)):
                if not self.is_reply(msg, seq):
                    continue
                kind = msg["header"]["type"]
                if kind == NLMSG_DONE:
                    return entries
                if kind == NLMSG_ERROR:
                    raise OSError(-int(msg["error"] or 0), "netlink dump failed")
                entries.append(msg)


def device_index(dumper: NetlinkDumper, device: str) -> int:
    """The interface index of ``device``; NotFoundError naming the devices present otherwise."""
    names: dict[str, int] = {}
    for link in dumper.dump(rtnl.RTM_GETLINK, socket.AF_UNSPEC):
        names[str(link.get_attr("IFLA_IFNAME"))] = int(link["index"])
    if device not in names:
        raise NotFoundError(f"device {device!r} not found; devices: {', '.join(sorted(names))}")
    return names[device]


def address_texts(msg: Any) -> tuple[str | None, ...]:
    """IFA_LOCAL and IFA_ADDRESS of an address message."""
    return (msg.get_attr("IFA_LOCAL"), msg.get_attr("IFA_ADDRESS"))


class AddressWatcher:
    """Observations ``True``/``False`` (VIP present or not) for one VIP on one device, in order."""

    def __init__(self, sock: socket.socket, device: str, vip: IPInterface) -> None:
        self.dumper = NetlinkDumper(sock)
        self.sock = sock
        self.vip = vip
        self.device = device
        self.family = socket.AF_INET if vip.version == 4 else socket.AF_INET6
        self.index = device_index(self.dumper, device)
        self.ordering = DumpOrdering()
        self._dump_seq = 0
        self.resyncs = 0

    def subscribe_and_dump(self) -> None:
        """Join the address and link groups, then ask for the current addresses (in this order)."""
        group = rtnl.RTNLGRP_IPV4_IFADDR if self.vip.version == 4 else rtnl.RTNLGRP_IPV6_IFADDR
        self.sock.setsockopt(SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, group)
        self.sock.setsockopt(SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, rtnl.RTNLGRP_LINK)
        self.resync()

    def resync(self) -> None:
        """Dump the addresses again (at start and after lost events)."""
        self.ordering.start_dump()
        self._dump_seq = self.dumper.send_dump(rtnl.RTM_GETADDR, self.family)
        self.resyncs += 1

    def wait(self, timeout: float, wake_fd: int | None = None) -> list[bool]:
        """Wait up to ``timeout`` s for messages; return the observations they make (in order)."""
        fds = [self.sock.fileno()] if wake_fd is None else [self.sock.fileno(), wake_fd]
        if self.ordering.dumping:
            timeout = min(timeout, DUMP_KICK_SECONDS)
        readable, _, _ = select.select(fds, [], [], timeout)
        if self.sock.fileno() in readable:
            return self._receive(0)
        if self.ordering.dumping:
            # A dump the kernel could not queue resumes only inside a receive call.
            return self._receive(socket.MSG_DONTWAIT)
        return []

    def _receive(self, flags: int) -> list[bool]:
        try:
            data = self.sock.recv(RECEIVE_BUFFER, flags)
        except BlockingIOError:
            return []
        except OSError as exc:
            if exc.errno != errno.ENOBUFS:
                raise
            self._restart()
            return []
        observations: list[bool] = []
        for msg in self.dumper.parse(data):
            observations.extend(self._handle(msg))
        return observations

    def _restart(self) -> None:
        """Events were lost: empty the queue (it is stale anyway), then dump again."""
        for _ in range(100_000):
            try:
                self.sock.recv(RECEIVE_BUFFER, socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno != errno.ENOBUFS:
                    raise
        self.resync()

    def _handle(self, msg: Any) -> list[bool]:
        kind = msg["header"]["type"]
        if msg["header"]["pid"] == self.dumper.portid:
            return self._handle_reply(msg, kind)
        if kind in _LINK_EVENTS:
            return self._handle_link(msg, kind)
        if kind not in _ADDRESS_EVENTS or not self._is_vip(msg):
            return self.ordering.on_broadcast(None)
        return self.ordering.on_broadcast(kind == rtnl.RTM_NEWADDR)

    def _handle_link(self, msg: Any, kind: int) -> list[bool]:
        """The device went away (no VIP) or a device of its name appeared (watch that one)."""
        index = int(msg["index"])
        if kind == rtnl.RTM_DELLINK:
            return self.ordering.on_broadcast(False) if index == self.index else []
        if index != self.index and msg.get_attr("IFLA_IFNAME") == self.device:
            self.index = index
            self.resync()
        return []

    def _handle_reply(self, msg: Any, kind: int) -> list[bool]:
        if not (self.ordering.dumping and self.dumper.is_reply(msg, self._dump_seq)):
            return []  # the rest of a dump abandoned by a restart
        if kind == NLMSG_DONE:
            self.ordering.on_dump_entry(False)
            return self.ordering.on_dump_done()
        if kind == NLMSG_ERROR:
            code = -int(msg["error"] or 0)
            if code in (errno.ENOBUFS, errno.EBUSY):
                self._restart()
                return []
            raise OSError(code, "netlink address dump failed")
        self.ordering.on_dump_entry(self._is_vip(msg))
        return []

    def _is_vip(self, msg: Any) -> bool:
        return is_vip_event(int(msg["index"]), address_texts(msg), self.index, self.vip)


class AddressReader:
    """Reads the addresses of one device in one namespace, on demand, over one kept socket."""

    def __init__(self, netns: str | None, device: str) -> None:
        self.sock = netlink_socket(netns)
        try:
            self.dumper = NetlinkDumper(self.sock)
            self.index = device_index(self.dumper, device)
        except BaseException:
            self.sock.close()
            raise

    def addresses(self) -> set[str]:
        """The addresses (without prefix) on the device right now."""
        found: set[str] = set()
        for family in (socket.AF_INET, socket.AF_INET6):
            for msg in self.dumper.dump(rtnl.RTM_GETADDR, family):
                if int(msg["index"]) == self.index:
                    found.update(a for a in address_texts(msg) if a)
        return found

    def close(self) -> None:
        self.sock.close()


def addresses_on(netns: str, device: str) -> set[str]:
    """The addresses (without prefix) configured on ``device`` in ``netns`` right now."""
    with contextlib.closing(AddressReader(netns, device)) as reader:
        return reader.addresses()
