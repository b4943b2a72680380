"""Leader election over a tooz lock. I/O: the coordination service (etcd, redis, a lock file).

tooz's etcd and file drivers have no native election, so the leader is whoever
holds one named tooz lock:

- ``file://DIR`` (one host): an ``fcntl`` lock under ``DIR``; it never expires
  and the kernel releases it the moment the holder dies.
- ``etcd3+http://HOST:PORT?lock_timeout=N`` (several hosts): a key bound to an
  etcd lease of ``N`` seconds. The holder refreshes the lease (tooz
  ``coordinator.heartbeat()``) from a background thread; when the holder dies,
  the lease (and with it the lock) expires ``N`` seconds after its last refresh.
- ``redis://...`` works the same way through tooz's redis driver (untested here).

Safety: a leader must stop acting *before* its lock can expire. The time of the
last successful refresh is kept on the injected monotonic clock, taken *before*
the refresh request was sent (the lease runs at least ``lock_timeout`` from
then). ``still_leader()`` gives leadership up as soon as
``now - last_ok > lock_timeout * safety_fraction``, which leaves
``lock_timeout * (1 - safety_fraction)`` seconds for the caller to notice and
stop before anyone else can win the lock. With the heartbeat thread (the
default) ``still_leader()`` only compares clocks: it never blocks on the network,
so a hung etcd cannot delay the decision to stop.

Every tooz, etcd3gw and OS error is translated to :class:`l3ha.errors.CoordinationError`
in one place (``_translated``); a URL naming no tooz driver is a ``BadInputError``.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import re
import socket
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from l3ha.clock import Clock
from l3ha.errors import BadInputError, CoordinationError

LOG = logging.getLogger(__name__)

DEFAULT_LOCK_NAME = "l3ha-watch"
#: lock_timeout used for etcd URLs that do not give one (tooz's own default is 30 s).
DEFAULT_ETCD_LOCK_TIMEOUT = 10
DEFAULT_SAFETY_FRACTION = 0.5
#: Each non-blocking acquire on etcd creates a lease: never attempt more often than this
#: (file locks cost nothing to try and are not limited).
MIN_ATTEMPT_INTERVAL = 0.3
#: Refreshes per give-up budget: two refreshes may fail before leadership is given up.
REFRESHES_PER_BUDGET = 3


def default_url(state_dir: Path) -> str:
    """The one-host default: a file lock under ``STATE_DIR/coordination``."""
    return (state_dir.resolve() / "coordination").as_uri()


def default_member_id() -> str:
    """A member id unique among running instances: ``HOSTNAME-PID``."""
    return f"{socket.gethostname()}-{os.getpid()}"


def display_url(url: str) -> str:
    """``url`` without credentials or query, for logs and error messages."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


_ERRNO = re.compile(r"\[Errno -?\d+\] [^\"')]+")
_TIMEOUT = re.compile(r"timed? ?out", re.IGNORECASE)


def _first_line(exc: BaseException) -> str:
    """A short reason for ``exc``, looking through its causes (tooz and etcd3gw wrap twice)."""
    texts: list[str] = []
    seen: BaseException | None = exc
    for _ in range(6):
        if seen is None:
            break
        texts.append(str(getattr(seen, "detail_text", None) or seen))
        seen = seen.__cause__ or seen.__context__
    joined = " ".join(texts)
    found = _ERRNO.search(joined)
    if found:
        return found.group(0).strip().rstrip(":")
    if _TIMEOUT.search(joined) or "Timeout" in type(exc).__name__:
        return "timed out"
    for text in texts:
        if text.strip():
            return text.strip().splitlines()[0][:200]
    return type(exc).__name__


@contextlib.contextmanager
def _translated(url: str, action: str) -> Iterator[None]:
    """The one place where tooz, etcd3gw, requests and OS errors become l3ha errors."""
    import requests
    import tooz
    from etcd3gw import exceptions as etcd_exc

    try:
        yield
    except (tooz.ToozError, etcd_exc.Etcd3Exception, requests.RequestException, OSError) as exc:
        raise CoordinationError(
            f"coordination service {display_url(url)}: {action} failed: {_first_line(exc)}"
        ) from exc


def _driver_options(url: str) -> dict[str, str]:
    """Options l3ha passes to tooz so that etcd requests time out within the budget.

    For etcd URLs: ``lock_timeout`` (default 10 s), a membership lease of the
    same length, and an HTTP request timeout of about a third of the give-up
    budget (at least 1 s, tooz takes whole seconds). Options given in the URL win.
    """
    parts = urllib.parse.urlsplit(url)
    if not parts.scheme.startswith("etcd3"):
        return {}
    query = urllib.parse.parse_qs(parts.query)
    lock_timeout = int(query.get("lock_timeout", [str(DEFAULT_ETCD_LOCK_TIMEOUT)])[0])
    budget = lock_timeout * DEFAULT_SAFETY_FRACTION
    options = {
        "lock_timeout": str(lock_timeout),
        "membership_timeout": str(lock_timeout),
        "timeout": str(max(1, int(budget / REFRESHES_PER_BUDGET))),
    }
    return {name: value for name, value in options.items() if name not in query}


def _make_coordinator(url: str, member_id: str) -> Any:
    """A started tooz coordinator for ``url``."""
    from tooz import coordination

    options = _driver_options(url)
    try:
        coordinator = coordination.get_coordinator(url, member_id.encode(), None, **options)
    except (ValueError, RuntimeError, ImportError) as exc:
        scheme = urllib.parse.urlsplit(url).scheme or "(none)"
        raise BadInputError(
            f"coordination URL {display_url(url)}: no usable tooz driver for scheme "
            f"{scheme!r} ({_first_line(exc)}); use file:///DIR or etcd3+http://HOST:PORT"
        ) from exc
    with _translated(url, "connect"):
        coordinator.start(start_heart=False)
    return coordinator


def _still_owner(lock: Any) -> bool:
    """Whether the lock's key still holds our token (etcd), or what the driver says.

    tooz's etcd lock refreshes its lease without looking at the answer, so an
    expired lease (and a lock another member now holds) is only visible by
    reading the key back. That needs the lock's private ``_coord``, ``_key`` and
    ``_uuid`` (tooz 6-9); other drivers answer ``is_still_owner()``.
    """
    import tooz

    client = getattr(getattr(lock, "_coord", None), "client", None)
    key, token = getattr(lock, "_key", None), getattr(lock, "_uuid", None)
    if client is not None and key is not None and token is not None:
        values = client.get(key)
        return bool(values) and base64.b64encode(values[0]).decode("ascii") == token
    try:
        return bool(lock.is_still_owner())
    except tooz.NotImplemented:
        return True


class Leadership:
    """Whether this process is the one that acts, through one named tooz lock.

    Use: ``connect()`` once at startup (raises ``CoordinationError`` when the
    service is unreachable); ``try_acquire()`` every cycle while a follower;
    ``still_leader()`` before every action while the leader (``False`` means
    stop acting now); ``release()`` on shutdown; ``close()`` at exit.
    ``try_acquire`` raises ``CoordinationError`` when the service cannot be
    reached: the caller stays a follower and tries again next cycle.
    """

    def __init__(
        self,
        url: str,
        member_id: str,
        clock: Clock,
        lock_name: str = DEFAULT_LOCK_NAME,
        *,
        safety_fraction: float = DEFAULT_SAFETY_FRACTION,
        heartbeat_thread: bool = True,
    ) -> None:
        if not 0 < safety_fraction < 1:
            raise ValueError("safety_fraction must be between 0 and 1")
        self.url = url
        self.member_id = member_id
        self.lock_name = lock_name
        self._clock = clock
        self._safety = safety_fraction
        self._threaded = heartbeat_thread
        self._io = threading.Lock()  # serialises every call into tooz
        self._state = threading.Lock()  # guards the fields below
        self._coordinator: Any = None
        self._lock: Any = None
        self._held = False
        self._last_ok = 0.0
        self._last_refresh_try = 0.0
        self._last_attempt: float | None = None
        self._discard: list[tuple[Any, Any]] = []
        self._stop_beating = threading.Event()
        self._beater: threading.Thread | None = None
        self.lock_timeout: float | None = None
        self.lost_reason = ""

    # --- public ---------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        """Whether this member held the lock at the last check (no I/O)."""
        with self._state:
            return self._held

    @property
    def give_up_after(self) -> float | None:
        """Seconds without a successful refresh after which leadership is given up."""
        return None if self.lock_timeout is None else self.lock_timeout * self._safety

    def connect(self) -> None:
        """Reach the coordination service now; a clear one-line error if it cannot be."""
        with self._io:
            self._ensure_coordinator()

    def try_acquire(self) -> bool:
        """Try once, without blocking, to become the leader; ``True`` if this member leads."""
        if self.is_leader:
            return self.still_leader()
        with self._io:
            self._cleanup_discarded()
            coordinator = self._ensure_coordinator()
            now = self._clock.monotonic()
            if self._too_soon(now):
                return False
            self._last_attempt = now
            if self._lock is None:
                self._lock = coordinator.get_lock(self.lock_name.encode())
            with _translated(self.url, "acquire lock"):
                got = bool(self._lock.acquire(blocking=False))
            if not got:
                return False
            with self._state:
                self._held = True
                self._last_ok = self._last_refresh_try = now
                self.lost_reason = ""
        LOG.info("leadership acquired: %s holds %s", self.member_id, self.lock_name)
        self._start_beating()
        return True

    def still_leader(self) -> bool:
        """Say whether this member may still act; ``False`` means stop acting at once.

        ``False`` once the lock could not be refreshed within the give-up
        budget, or was found taken. With the heartbeat thread (the default)
        this does no I/O and never blocks; without it, it refreshes the lock
        itself when a refresh is due (blocking up to a few request timeouts).
        """
        if not self.is_leader:
            return False
        if self.lock_timeout is None:
            return True  # a file lock cannot expire while this process lives
        if not self._threaded and self._io.acquire(blocking=False):
            try:
                if self._refresh_due():
                    self._refresh()
            finally:
                self._io.release()
        return self._judge()

    def release(self) -> None:
        """Give leadership up (a no-op for a follower); errors are logged, not raised."""
        self._stop_heartbeats()
        with self._io:
            with self._state:
                was_leader, self._held = self._held, False
            if self._lock is not None and was_leader:
                self._discard.append((None, self._lock))
                self._lock = None
            self._cleanup_discarded()
        if was_leader:
            LOG.info("leadership released by %s", self.member_id)

    def close(self) -> None:
        """Release leadership and disconnect."""
        self.release()
        with self._io:
            if self._coordinator is not None:
                self._discard.append((self._coordinator, None))
                self._coordinator = None
            self._cleanup_discarded()

    # --- internals ------------------------------------------------------

    def _ensure_coordinator(self) -> Any:
        if self._coordinator is None:
            self._coordinator = _make_coordinator(self.url, self.member_id)
            timeout = getattr(self._coordinator, "lock_timeout", None)
            self.lock_timeout = float(timeout) if timeout else None
        return self._coordinator

    def _too_soon(self, now: float) -> bool:
        """Lease-based locks (etcd, redis) are not tried more often than MIN_ATTEMPT_INTERVAL."""
        if self.lock_timeout is None or self._last_attempt is None:
            return False
        return now - self._last_attempt < MIN_ATTEMPT_INTERVAL

    def _refresh_interval(self) -> float:
        assert self.lock_timeout is not None
        return self.lock_timeout * self._safety / REFRESHES_PER_BUDGET

    def _refresh_due(self) -> bool:
        with self._state:
            return self._clock.monotonic() - self._last_refresh_try >= self._refresh_interval()

    def _refresh(self) -> None:
        """One heartbeat and ownership check; the caller holds ``_io``."""
        started = self._clock.monotonic()
        with self._state:
            if not self._held:
                return
            coordinator, lock = self._coordinator, self._lock
            self._last_refresh_try = started
        try:
            with _translated(self.url, "refresh lock"):
                coordinator.heartbeat()
                owner = _still_owner(lock)
        except CoordinationError as exc:
            LOG.warning("leadership refresh failed: %s", exc)
            return
        if not owner:
            self._lose("the lock is no longer ours (it expired and may be held by another member)")
            return
        with self._state:
            if self._held:
                self._last_ok = max(self._last_ok, started)

    def _judge(self) -> bool:
        budget = self.give_up_after
        with self._state:
            if not self._held:
                return False
            silent = self._clock.monotonic() - self._last_ok
        if budget is not None and silent > budget:
            self._lose(f"no successful refresh for {silent:.1f} s (limit {budget:.1f} s)")
            return False
        return True

    def _lose(self, reason: str) -> None:
        """Stop being leader at once; the session is discarded (cleaned up later, off this path)."""
        with self._state:
            if not self._held:
                return
            self._held = False
            self.lost_reason = reason
            self._discard.append((self._coordinator, self._lock))
            self._coordinator = None
            self._lock = None
        self._stop_beating.set()
        LOG.warning("leadership lost by %s: %s", self.member_id, reason)

    def _cleanup_discarded(self) -> None:
        """Release and stop discarded sessions (best effort); the caller holds ``_io``."""
        with self._state:
            pending, self._discard = self._discard, []
        for coordinator, lock in pending:
            if lock is not None:
                with contextlib.suppress(Exception):
                    lock.release()
            if coordinator is not None:
                with contextlib.suppress(Exception):
                    coordinator.stop()

    def _start_beating(self) -> None:
        if not self._threaded or self.lock_timeout is None:
            return
        self._stop_heartbeats()
        self._stop_beating = threading.Event()
        self._beater = threading.Thread(
            target=self._beat, args=(self._stop_beating,), name="l3ha-leader-heartbeat", daemon=True
        )
        self._beater.start()

    def _beat(self, stop: threading.Event) -> None:
        interval = self._refresh_interval()
        while not stop.wait(interval):
            with self._io:
                if stop.is_set():
                    break
                self._refresh()
            if not self._judge():
                break
        with self._io:
            self._cleanup_discarded()

    def _stop_heartbeats(self) -> None:
        self._stop_beating.set()
        beater, self._beater = self._beater, None
        if beater is not None and beater is not threading.current_thread():
            beater.join(timeout=30)
