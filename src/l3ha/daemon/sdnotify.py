"""systemd's notify protocol without a dependency. I/O: datagrams to ``$NOTIFY_SOCKET``.

``ready()`` once the daemon has observed the cloud, ``watchdog()`` every cycle,
``status(text)`` for ``systemctl status``, ``stopping()`` on shutdown. With
``$NOTIFY_SOCKET`` unset (not run by systemd) every call is a no-op. A socket
name starting with ``@`` is Linux's abstract namespace. Send errors are logged
once and otherwise ignored: a missing supervisor never stops the daemon.
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
        self._watchdog_usec = env.get("WATCHDOG_USEC", "")
        self._watchdog_pid = env.get("WATCHDOG_PID", "")
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

    def reloading(self) -> bool:
        """The daemon is re-reading its configuration (send ``ready()`` when done)."""
        return self.notify("RELOADING=1")

    def status(self, text: str) -> bool:
        """A one-line status for ``systemctl status`` (newlines become spaces)."""
        return self.notify("STATUS=" + " ".join(text.splitlines()))

    def watchdog_interval(self) -> float | None:
        """Half of ``$WATCHDOG_USEC`` in seconds, or None when no watchdog applies to us."""
        if self._watchdog_pid and self._watchdog_pid != str(os.getpid()):
            return None
        try:
            usec = int(self._watchdog_usec)
        except ValueError:
            return None
        return usec / 2_000_000 if usec > 0 else None


def ready(status: str = "") -> bool:
    """``Notifier().ready``: this process's environment, read now."""
    return Notifier().ready(status)


def watchdog() -> bool:
    """``Notifier().watchdog``: this process's environment, read now."""
    return Notifier().watchdog()


def stopping(status: str = "") -> bool:
    """``Notifier().stopping``: this process's environment, read now."""
    return Notifier().stopping(status)


def status(text: str) -> bool:
    """``Notifier().status``: this process's environment, read now."""
    return Notifier().status(text)


def watchdog_interval() -> float | None:
    """``Notifier().watchdog_interval``: this process's environment, read now."""
    return Notifier().watchdog_interval()
