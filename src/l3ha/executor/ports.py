"""Waiting for what a move placed to be ready on its new agent: the readiness poller of
every kind of placement.

``ports_ready`` is pure (a router's ports). ``PortWaiter`` does I/O: on a
thread of its own (so waiting never holds a write slot) it polls every object
due for a look with one call of its kind's ``Readiness`` (``RouterReadiness``:
``ports_of_routers``, many routers per request; the DHCP kind's reads DHCP
ports), per target agent only the longest-waiting few, and calls back ready,
or not ready with the port ids still waited for at the object's deadline.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from l3ha.clock import Clock
from l3ha.cloud.base import Cloud, PortState
from l3ha.errors import L3haError
from l3ha.model import MoveKind

log = logging.getLogger(__name__)

HA_INTERFACE = "network:router_ha_interface"
#: Ports that live where the router is scheduled (distributed interfaces do not).
CENTRAL_OWNERS = frozenset(
    {
        "network:router_gateway",
        "network:router_interface",
        "network:router_centralized_snat",
        "network:ha_router_replicated_interface",
    }
)


def ports_ready(
    ports: Sequence[PortState], kind: MoveKind, host: str
) -> tuple[bool, tuple[str, ...]]:
    """Whether the router's ports are up on ``host``; also the ids still waited for.

    New HA replica: its HA port on ``host`` exists and is ACTIVE (the other
    replicas' ports and the router's central ports, which follow the active
    replica, say nothing about it). Otherwise: every centrally hosted port is
    bound to ``host`` AND ACTIVE. Neutron moves a port's ``binding:host_id``
    only when the new agent fetches the router, so right after the bind the
    ports are still ACTIVE on the old host (a dead agent never turns them
    DOWN), and a port bound to no host is not up anywhere: neither counts.
    For an HA router bound alone (repair) the central ports reach ``host``
    once its replica reports active. A router without central ports is ready
    at once.
    """
    if kind is MoveKind.ADD_REPLICA:
        mine = [p for p in ports if p.device_owner == HA_INTERFACE and p.host == host]
        if not mine:
            return False, ()
        waiting = tuple(p.id for p in mine if p.status != "ACTIVE")
        return not waiting, waiting
    central = [p for p in ports if p.device_owner in CENTRAL_OWNERS]
    waiting = tuple(p.id for p in central if p.status != "ACTIVE" or p.host != host)
    return not waiting, waiting


class Readiness(Protocol):
    """How a kind reads and judges the readiness of what its moves placed."""

    def read(self, object_ids: list[str]) -> Mapping[str, Sequence[Any]]:
        """The ports of each object (one batched read; raises ``L3haError``)."""
        ...

    def ready(self, ports: Sequence[Any], kind: Any, host: str) -> tuple[bool, tuple[str, ...]]:
        """Whether the object is ready on ``host``, and the port ids still waited for."""
        ...


@dataclass(frozen=True)
class RouterReadiness:
    """Routers: their ports, ``ports_ready``."""

    cloud: Cloud

    def read(self, object_ids: list[str]) -> Mapping[str, Sequence[PortState]]:
        return self.cloud.ports_of_routers(object_ids)

    def ready(
        self, ports: Sequence[PortState], kind: MoveKind, host: str
    ) -> tuple[bool, tuple[str, ...]]:
        return ports_ready(ports, kind, host)


@dataclass
class _Entry:
    object_id: str
    kind: Any  # the kind's move kind, handed to ``Readiness.ready``
    host: str
    deadline: float
    next_check: float
    done: Callable[[bool, tuple[str, ...]], None]
    waiting: tuple[str, ...] = ()


class PortWaiter:
    """Polls objects' readiness until ready or their deadline; calls back once per object."""

    def __init__(
        self, readiness: Readiness, clock: Clock, interval: float, window: int | None = None
    ) -> None:
        self._readiness = readiness
        self._clock = clock
        self._interval = interval
        self._window = window
        self._entries: list[_Entry] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = False
        self._thread = threading.Thread(target=self._loop, name="l3ha-port-waiter", daemon=True)
        self._thread.start()

    def add(
        self,
        object_id: str,
        kind: Any,
        host: str,
        timeout: float,
        done: Callable[[bool, tuple[str, ...]], None],
    ) -> None:
        """Wait for one object; ``done(ready, waiting_port_ids)`` is called exactly once."""
        now = self._clock.monotonic()
        entry = _Entry(
            object_id, kind, host, now + timeout, now + min(self._interval, timeout), done
        )
        with self._lock:
            self._entries.append(entry)
        self._wake.set()

    def close(self) -> None:
        """Stop polling (entries still waiting are dropped) and join the threads."""
        with self._lock:
            self._stop = True
        self._wake.set()
        self._thread.join()

    def _loop(self) -> None:
        while True:
            with self._lock:
                if self._stop:
                    return
                now = self._clock.monotonic()
                due, upcoming = self._due(now)
            if due:
                self._check(due)
                continue
            self._wake.clear()
            if upcoming is None:
                self._wake.wait(self._interval)
            else:
                self._clock.sleep(min(self._interval, max(upcoming - now, 0.001)))

    def _due(self, now: float) -> tuple[list[_Entry], float | None]:
        """Entries to poll now, and when the next one is due.

        Per target host only the ``window`` longest-waiting routers are polled
        (an agent works through its queue roughly in order, so later ones cannot
        be ready much sooner); any router at its deadline is polled once more.
        Once one router is due, every router that would be due within the next
        interval is polled with it: they share the call, and stay in step after.
        """
        rank: dict[str, int] = {}
        timed: list[tuple[float, _Entry]] = []
        for entry in self._entries:  # in the order the routers were bound
            position = rank.get(entry.host, 0)
            rank[entry.host] = position + 1
            in_window = self._window is None or position < self._window
            timed.append((entry.next_check if in_window else entry.deadline, entry))
        if not timed:
            return [], None
        first = min(when for when, _ in timed)
        if first > now:
            return [], first
        return [e for when, e in timed if when < now + self._interval], None

    def _check(self, due: list[_Entry]) -> None:
        """Read the ports of every due object at once; finish those ready or out of time."""
        try:
            ports: Mapping[str, Sequence[Any]] | None = self._readiness.read(
                [e.object_id for e in due]
            )
        except L3haError as exc:
            log.warning("reading ports of %d object(s) failed: %s", len(due), exc)
            ports = None
        now = self._clock.monotonic()
        for entry in due:
            if ports is None:
                ready, waiting = False, entry.waiting
            else:
                found = ports.get(entry.object_id, [])
                ready, waiting = self._readiness.ready(found, entry.kind, entry.host)
            if not ready and now < entry.deadline:
                entry.waiting = waiting
                entry.next_check = min(now + self._interval, entry.deadline)
                continue
            with self._lock:
                self._entries.remove(entry)
            entry.done(ready, waiting)
