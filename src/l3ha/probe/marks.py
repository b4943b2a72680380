"""Markers from another shell: the running probe's unix socket and the ``mark`` client.

I/O: unix stream sockets, the runtime directory. A running probe listens on
``DIR/probe.sock`` when it writes to ``--output DIR`` and on a well-known
per-user path (``$XDG_RUNTIME_DIR/l3ha/probe.sock``, else
``/run/user/UID/l3ha/probe.sock``, else ``TMPDIR/l3ha-UID/probe.sock``) unless
another live probe already owns it. The protocol is one JSON line each way:
``{"text": "..."}`` -> ``{"ok": true, "t_s": 12.345}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path

from l3ha.errors import BadInputError, L3haError

log = logging.getLogger(__name__)

SOCKET_NAME = "probe.sock"
MAX_SUN_PATH = 107
MAX_MARK = 500


class NoProbeError(L3haError):
    """No probe is listening where the marker should go."""

    exit_code = 1


def well_known_socket() -> Path:
    """The per-user path a probe listens on when no other probe holds it."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "l3ha" / SOCKET_NAME
    user_run = Path(f"/run/user/{os.getuid()}")
    if user_run.is_dir():
        return user_run / "l3ha" / SOCKET_NAME
    return Path(tempfile.gettempdir()) / f"l3ha-{os.getuid()}" / SOCKET_NAME


def socket_in(output: Path) -> Path:
    """The socket a probe writing to ``output`` listens on."""
    return output / SOCKET_NAME


def is_live(path: Path) -> bool:
    """Whether something accepts connections on the unix socket at ``path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        try:
            sock.connect(str(path))
        except OSError:
            return False
    return True


def usable_path(path: Path) -> bool:
    """Short enough for a unix socket address and not held by a live probe."""
    if len(os.fsencode(str(path))) > MAX_SUN_PATH:
        log.warning("marker socket path too long, not listening on %s", path)
        return False
    if path.exists() and is_live(path):
        log.warning("another probe listens on %s; use --socket or --output to mark this one", path)
        return False
    return True


OnMark = Callable[[str], float]
"""Called with the marker text; returns the marker's offset from the probe start."""


class MarkServer:
    """Listens on unix sockets and hands each marker to ``on_mark``."""

    def __init__(self, paths: list[Path], on_mark: OnMark) -> None:
        self._paths = paths
        self._on_mark = on_mark
        self._servers: list[asyncio.AbstractServer] = []
        self.listening: list[Path] = []

    async def start(self) -> None:
        for path in self._paths:
            if not usable_path(path):
                continue
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            self._servers.append(await asyncio.start_unix_server(self._serve, str(path)))
            os.chmod(path, 0o600)
            self.listening.append(path)

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
            await server.wait_closed()
        for path in self.listening:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        self._servers.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 5.0)
            text = str(json.loads(line)["text"])[:MAX_MARK]
            reply: dict[str, object] = {"ok": True, "t_s": round(self._on_mark(text), 3)}
        except (ValueError, KeyError, TypeError, TimeoutError) as exc:
            reply = {"ok": False, "error": f"bad marker request: {exc}"}
        writer.write(json.dumps(reply).encode() + b"\n")
        with contextlib.suppress(OSError):
            await writer.drain()
        writer.close()


def send_mark(path: Path, text: str, timeout: float = 5.0) -> float:
    """Send one marker to the probe listening at ``path``; return its offset in seconds."""
    if not text.strip():
        raise BadInputError("the marker text is empty")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(str(path))
            sock.sendall(json.dumps({"text": text}).encode() + b"\n")
            reply = json.loads(sock.makefile("rb").readline() or b"{}")
        except (OSError, ValueError) as exc:
            raise NoProbeError(f"no running probe at {path} ({exc})") from None
    if not reply.get("ok"):
        raise NoProbeError(f"the probe at {path} refused the marker: {reply.get('error')}")
    return float(reply["t_s"])
