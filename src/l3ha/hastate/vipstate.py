"""The VIP state machine: address observations in, ordered transitions out. Pure.

A node is ``master`` for a router while the router's VIP is configured on its
HA device and ``backup`` while it is not. This module turns observations of
"is the VIP there?" into numbered transitions, decides in which order a dump of
the current addresses and the address events received around it apply
(``DumpOrdering``), decides which hooks to run when transitions arrive faster
than hooks finish (``HookQueue``), and lets consumers apply only increasing
sequence numbers (``SequenceFilter``). Nothing here reads a clock or a socket:
callers pass the times in.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from l3ha.errors import BadInputError

IPInterface = ipaddress.IPv4Interface | ipaddress.IPv6Interface


class VipState(StrEnum):
    """What a node is for one router, judged by the VIP on its device."""

    MASTER = "master"
    BACKUP = "backup"


@dataclass(frozen=True)
class Transition:
    """One change of state, numbered; ``previous`` is None for the first one of a run.

    ``run`` identifies the monitor process run that made it (random per start):
    without a state file a restarted monitor numbers from 1 again, and the run
    tells consumers that the numbering restarted.
    """

    seq: int
    state: VipState
    previous: VipState | None
    monotonic: float
    wall: datetime
    run: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form written to state files and sockets."""
        return {
            "seq": self.seq,
            "state": self.state.value,
            "previous": self.previous.value if self.previous else None,
            "monotonic": round(self.monotonic, 6),
            "wall": self.wall.isoformat(),
            "run": self.run,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Transition:
        """Parse the JSON form; a malformed document is a BadInputError."""
        try:
            seq = int(data["seq"])
            state = VipState(data["state"])
            prev = data.get("previous")
            previous = VipState(prev) if prev else None
            monotonic = float(data["monotonic"])
            wall = datetime.fromisoformat(str(data["wall"]))
            run = str(data.get("run") or "")
        except (KeyError, ValueError, TypeError) as exc:
            raise BadInputError(f"malformed transition {dict(data)!r}: {exc}") from exc
        if seq < 1:
            raise BadInputError(f"malformed transition: seq {seq} is not positive")
        return cls(seq, state, previous, monotonic, wall, run)


def parse_vip(text: str) -> IPInterface:
    """``169.254.0.1/24`` or a bare address (taken as a host route); one-line error otherwise."""
    try:
        return ipaddress.ip_interface(text.strip())
    except ValueError as exc:
        raise BadInputError(f"invalid VIP {text!r}: expected an address or CIDR") from exc


def is_vip_event(
    ifindex: int, addresses: tuple[str | None, ...], device_index: int, vip: IPInterface
) -> bool:
    """Whether an address message (its interface index and IFA_LOCAL/IFA_ADDRESS) is the VIP.

    The prefix length is not compared: keepalived may add the VIP with a
    different mask than the operator wrote, and the address alone decides.
    """
    if ifindex != device_index:
        return False
    for text in addresses:
        if text is None:
            continue
        try:
            if ipaddress.ip_address(text) == vip.ip:
                return True
        except ValueError:
            continue
    return False


class VipStateMachine:
    """Observations of VIP presence -> numbered transitions; numbering continues from ``last_seq``.

    The first observation always yields a transition (the state at start).
    Later observations yield one only when the state changes. Sequence numbers
    only grow, also across restarts when ``last_seq`` comes from the state file.
    Every transition carries ``run``, the id of this monitor run.
    """

    def __init__(self, last_seq: int = 0, run: str = "") -> None:
        if last_seq < 0:
            raise ValueError("last_seq must not be negative")
        self._seq = last_seq
        self.run = run
        self._current: Transition | None = None

    @property
    def current(self) -> Transition | None:
        """The latest transition, None before the first observation."""
        return self._current

    def observe(self, present: bool, monotonic: float, wall: datetime) -> Transition | None:
        """Apply one observation; return the new transition or None when nothing changed."""
        state = VipState.MASTER if present else VipState.BACKUP
        previous = self._current.state if self._current else None
        if previous is state:
            return None
        self._seq += 1
        self._current = Transition(self._seq, state, previous, monotonic, wall, self.run)
        return self._current


@dataclass
class DumpOrdering:
    """Orders one address dump against broadcasts received on the same netlink socket.

    The kernel queues messages on a socket in the order they happen, and an
    address event is broadcast only after the change is made. So a broadcast
    received *before* the first message of the dump is already reflected in
    the dump (it is dropped), and one received after it is applied after the
    dump's result, in arrival order. Events are idempotent statements
    ("the VIP is there" / "is not"), so applying one the dump already saw is
    harmless. ``None`` stands for a broadcast about some other address.
    """

    dumping: bool = False
    seen_dump: bool = False
    found: bool = False
    pending: list[bool] = field(default_factory=list)

    def start_dump(self) -> None:
        """A dump request was sent; what arrives now is ordered against it."""
        self.dumping, self.seen_dump, self.found = True, False, False
        self.pending.clear()

    def on_broadcast(self, present: bool | None) -> list[bool]:
        """A broadcast arrived; return the observations to apply now (maybe none)."""
        if present is None:
            return []
        if not self.dumping:
            return [present]
        if self.seen_dump:
            self.pending.append(present)
        return []

    def on_dump_entry(self, is_vip: bool) -> None:
        """One address of the dump arrived."""
        self.seen_dump = True
        self.found = self.found or is_vip

    def on_dump_done(self) -> list[bool]:
        """The dump ended: its result first, then the broadcasts that followed it."""
        observations = [self.found, *self.pending]
        self.dumping, self.seen_dump = False, False
        self.pending.clear()
        return observations


@dataclass
class HookQueue:
    """Which transition's hook runs next: serial, newest first, older ones skipped.

    ``offer`` records a transition; ``take`` returns the newest one not yet run
    (and the sequence numbers it makes obsolete) unless a hook is running;
    ``finish`` marks the running hook done. A hook never starts while another
    runs, and never for a transition older than one already started.
    """

    pending: list[Transition] = field(default_factory=list)
    running: Transition | None = None
    last_started_seq: int = 0

    def offer(self, transition: Transition) -> None:
        """A new transition is known."""
        if transition.seq > self.last_started_seq:
            self.pending.append(transition)

    def take(self) -> tuple[Transition | None, list[int]]:
        """The transition whose hook to start now, and the skipped (coalesced) sequence numbers."""
        if self.running is not None or not self.pending:
            return None, []
        newest = max(self.pending, key=lambda t: t.seq)
        skipped = sorted(t.seq for t in self.pending if t.seq != newest.seq)
        self.pending.clear()
        self.running = newest
        self.last_started_seq = newest.seq
        return newest, skipped

    def finish(self) -> Transition:
        """The running hook ended; return its transition."""
        if self.running is None:
            raise RuntimeError("no hook is running")
        done, self.running = self.running, None
        return done


@dataclass
class SequenceFilter:
    """A consumer's guard: within one monitor run, apply only higher sequence numbers.

    A transition from another run than the last one applied means the monitor
    restarted (maybe numbering from 1 again, without a state file): the filter
    starts over with that run and counts the reset in ``resets``.
    """

    last_seq: int = 0
    run: str = ""
    resets: int = 0

    def accept(self, transition: Transition) -> bool:
        """True (and remember it) when ``transition`` is newer than everything applied."""
        if self.last_seq and transition.run != self.run:
            self.last_seq = 0
            self.resets += 1
        if transition.seq <= self.last_seq:
            return False
        self.last_seq, self.run = transition.seq, transition.run
        return True
