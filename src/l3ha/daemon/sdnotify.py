"""systemd's notify protocol without a dependency. I/O: datagrams to ``$NOTIFY_SOCKET``.

``ready()`` once the daemon has observed the cloud, ``watchdog()`` every cycle,
``stopping()`` on shutdown. With ``$NOTIFY_SOCKET`` unset (not run by systemd)
every call is a no-op. A socket name starting with ``@`` is Linux's abstract
namespace. Send errors are logged once and otherwise ignored: a missing
supervisor never stops the daemon.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping

LOG = logging.getLogger(__name__)


def _address(name: str) -> str | bytes:
    """The socket address for a ``$NOTIFY_SOCKET`` value (``@name`` is abstract)."""
    if name.startswith("@"):
        return b"\0" + name[1:].encode()
    return name


class Notifier:
    """Sends ``KEY=VALUE`` lines to the service manager, if there is one."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self.socket_name = env.get("NOTIFY_SOCKET", "")
        self._warned = False

    @property
    def enabled(self) -> bool:
        """Whether a service manager listens."""
        return bool(self.socket_name)

    def notify(self, *lines: str) -> bool:
        """Send ``lines`` as one datagram; ``True`` when it was sent."""
        if not self.socket_name:
            return False
        payload = "\n".join(lines).encode()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.sendto(payload, _address(self.socket_name))
        except OSError as exc:
            if not self._warned:
                LOG.warning("cannot notify systemd at %s: %s", self.socket_name, exc)
                self._warned = True
            return False
        return True

    def ready(self, status: str = "") -> bool:
        """The daemon is up (it has observed the cloud once)."""
        return self.notify("READY=1", *([f"STATUS={status}"] if status else []))

    def watchdog(self) -> bool:
        """Pet the watchdog (call at least every ``watchdog_interval()`` seconds)."""
        return self.notify("WATCHDOG=1")

    def stopping(self, status: str = "") -> bool:
        """The daemon is shutting down."""
        return self.notify("STOPPING=1", *([f"STATUS={status}"] if status else []))
