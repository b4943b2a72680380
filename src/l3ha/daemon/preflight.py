"""The watch daemon's start-up check: what it would otherwise find out at failover time.

I/O: looks at the state directory and the coordination lock directory (stat and access
only: it creates nothing), opens and closes one TCP connection to a networked
coordination service, and opens and closes an ICMP socket for an ``icmp`` data-plane
probe. ``check_can_act(settings)`` raises a one-line ``BadInputError`` (exit 2) naming the
first thing that would stop the daemon from acting; it changes nothing. The settings
themselves (files, flags, their ranges) were checked when they were loaded.
"""

from __future__ import annotations

import os
import socket
import urllib.parse
from pathlib import Path

from l3ha.daemon.dataplane import ensure_probe_possible, parse_probe_spec
from l3ha.daemon.leader import display_url
from l3ha.daemon.settings import WatchSettings
from l3ha.errors import BadInputError

#: Ports of the coordination services a URL may leave out.
DEFAULT_PORTS = {"etcd3": 2379, "etcd3+http": 2379, "etcd3+https": 2379, "redis": 6379}
CONNECT_TIMEOUT = 3.0


def check_can_act(settings: WatchSettings, connect_timeout: float = CONNECT_TIMEOUT) -> None:
    """Raise ``BadInputError`` when the daemon could start but not act; return otherwise."""
    check_directory(Path(settings.state_dir), "state directory")
    check_coordination(settings.coordination, connect_timeout)
    if settings.dataplane_probe:
        ensure_probe_possible(parse_probe_spec(settings.dataplane_probe))


def check_directory(path: Path, what: str) -> None:
    """``path`` is a writable directory, or one that can be created."""
    existing = _nearest_existing(path)
    if not existing.is_dir():
        raise BadInputError(f"{what} {path}: {existing} is not a directory")
    if not _writable(existing):
        if existing == path:
            raise BadInputError(f"{what} {path} is not writable")
        raise BadInputError(f"{what} {path} cannot be created: {existing} is not writable")


def _nearest_existing(path: Path) -> Path:
    """``path`` or its closest ancestor that exists."""
    for candidate in (path, *path.parents):
        if os.path.lexists(candidate):
            return candidate
    return Path(path.anchor or ".")


def _writable(directory: Path) -> bool:
    if not os.access(directory, os.W_OK | os.X_OK):
        return False
    return not os.statvfs(directory).f_flag & os.ST_RDONLY


def check_coordination(url: str, timeout: float) -> None:
    """A lock directory that can be used, or a coordination service that answers."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "file":
        check_directory(Path(urllib.parse.unquote(parts.path)), "coordination directory")
        return
    try:
        port = parts.port or DEFAULT_PORTS.get(parts.scheme)
    except ValueError:
        where = parts.netloc.rpartition("@")[2]  # never the credentials
        raise BadInputError(
            f"coordination URL {parts.scheme}://{where}: the port is not valid"
        ) from None
    if not parts.hostname or port is None:
        return  # a driver l3ha does not know: tooz judges the URL when it connects
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout).close()
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise BadInputError(
            f"coordination service {display_url(url)} is not reachable: {reason}"
        ) from None
