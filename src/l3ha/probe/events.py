"""Control-plane events for the probe timeline, and the pollers that find them.

I/O: ``CloudEventPoller`` calls the cloud (through the ``l3ha.cloud.base.Cloud``
protocol) and ``JournalEventPoller`` reads l3ha's journal (read-only), each from
its own thread. The functions that turn observations into event texts are pure.
Any other source (markers) only has to call an ``EventSink`` with ``Event``
objects; ``EventPoller`` is the start/stop contract the probe runner drives.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from l3ha.clock import Clock
from l3ha.cloud.base import Cloud
from l3ha.errors import L3haError
from l3ha.journal import StepEvent, last_step_id, read_steps_since
from l3ha.model import Agent, Binding

T = TypeVar("T")

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Event:
    """Something that happened, stamped on the monotonic clock and as UNIX wall seconds."""

    mono: float
    wall: float
    source: str
    text: str

    def to_json(self, origin: float) -> dict[str, Any]:
        return {
            "t_s": round(self.mono - origin, 6),
            "mono": round(self.mono, 6),
            "wall": round(self.wall, 6),
            "source": self.source,
            "text": self.text,
        }


EventSink = Callable[[Event], None]


def stamp(clock: Clock, source: str, text: str) -> Event:
    """An event happening now."""
    return Event(clock.monotonic(), clock.wall().timestamp(), source, text)


# --- pure diffs ----------------------------------------------------------------


def agent_changes(before: Mapping[str, Agent], after: Mapping[str, Agent]) -> list[str]:
    """Event texts for agents that changed liveness or admin state, appeared or vanished."""
    texts = []
    for agent_id, agent in sorted(after.items(), key=lambda kv: kv[1].host):
        old = before.get(agent_id)
        name = f"agent {agent.host}"
        if old is None:
            texts.append(f"{name}: appeared ({'alive' if agent.alive else 'dead'})")
            continue
        if old.alive != agent.alive:
            texts.append(f"{name}: {'alive' if agent.alive else 'dead'}")
        if old.admin_state_up != agent.admin_state_up:
            texts.append(f"{name}: admin {'up' if agent.admin_state_up else 'down'}")
    for agent_id in sorted(set(before) - set(after)):
        texts.append(f"agent {before[agent_id].host}: gone")
    return texts


def binding_changes(
    router: str,
    before: Sequence[Binding],
    after: Sequence[Binding],
    hosts: Mapping[str, str],
) -> list[str]:
    """Event texts for one router: bound/unbound agents and ``ha_state`` changes."""
    old = {b.agent_id: b for b in before}
    new = {b.agent_id: b for b in after}
    texts = []
    for agent_id in sorted(new, key=lambda a: hosts.get(a, a)):
        host = hosts.get(agent_id, agent_id)
        if agent_id not in old:
            texts.append(f"router {router}: bound to {host}{_state_suffix(new[agent_id])}")
        elif old[agent_id].ha_state != new[agent_id].ha_state:
            texts.append(
                f"router {router} on {host}: {_state(old[agent_id])} -> {_state(new[agent_id])}"
            )
    for agent_id in sorted(set(old) - set(new), key=lambda a: hosts.get(a, a)):
        texts.append(f"router {router}: unbound from {hosts.get(agent_id, agent_id)}")
    return texts


def _state(binding: Binding) -> str:
    return str(binding.ha_state) if binding.ha_state is not None else "none"


def _state_suffix(binding: Binding) -> str:
    return f" ({binding.ha_state})" if binding.ha_state is not None else ""


# --- the pollers ----------------------------------------------------------------


class EventPoller:
    """Reports events to a sink while the probe runs: ``poll_once`` on a daemon thread every
    ``interval`` seconds until stopped (first at once when ``poll_at_start``)."""

    source: str
    thread_name: str
    poll_at_start: bool

    def __init__(self, clock: Clock, interval: float) -> None:
        self._clock = clock
        self._interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sink: EventSink = lambda event: None

    def start(self, sink: EventSink) -> None:
        """Begin reporting (return at once; work in the background)."""
        self._sink = sink
        self._thread = threading.Thread(target=self._loop, name=self.thread_name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop reporting and release resources (idempotent)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        if self.poll_at_start and not self._stop.is_set():
            self.poll_once()
        while not self._stop.wait(self._interval):
            self.poll_once()

    def poll_once(self) -> list[Event]:
        raise NotImplementedError

    def _report(self, texts: Sequence[str]) -> list[Event]:
        """Stamp ``texts`` as events now and hand them to the sink."""
        events = [stamp(self._clock, self.source, text) for text in texts]
        for event in events:
            self._sink(event)
        return events


class CloudEventPoller(EventPoller):
    """Polls agents (and the bindings of chosen routers) and reports what changed."""

    source, thread_name, poll_at_start = "cloud", "l3ha-probe-events", True

    def __init__(
        self,
        cloud: Cloud,
        clock: Clock,
        routers: Sequence[str] = (),
        interval: float = 2.0,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(clock, interval)
        self._cloud = cloud
        self._routers = list(routers)
        self._labels = dict(labels or {})
        self._agents: dict[str, Agent] | None = None
        self._bindings: dict[str, list[Binding]] = {}
        self._failing = False

    def poll_once(self) -> list[Event]:
        """Observe once and report the changes since the last observation."""
        try:
            texts = self._observe()
        except L3haError as exc:
            texts = [] if self._failing else [f"cloud: poll failed: {exc}"]
            self._failing = True
        else:
            if self._failing:
                texts.insert(0, "cloud: poll recovered")
            self._failing = False
        return self._report(texts)

    def _observe(self) -> list[str]:
        agents = {a.id: a for a in self._cloud.list_agents()}
        bindings = {r: self._cloud.router_bindings(r) for r in self._routers}
        hosts = {a.id: a.host for a in agents.values()}
        if self._agents is None:
            named = {self._labels.get(r, r): b for r, b in bindings.items()}
            texts = [_baseline(agents, named, hosts)]
        else:
            texts = agent_changes(self._agents, agents)
            for router in self._routers:
                texts += binding_changes(
                    self._labels.get(router, router),
                    self._bindings.get(router, []),
                    bindings[router],
                    hosts,
                )
        self._agents, self._bindings = agents, bindings
        return texts


def _baseline(
    agents: Mapping[str, Agent], bindings: Mapping[str, list[Binding]], hosts: Mapping[str, str]
) -> str:
    alive = sum(1 for a in agents.values() if a.alive)
    text = f"cloud: watching {len(agents)} L3 agents ({alive} alive)"
    for router, items in bindings.items():
        where = ", ".join(f"{hosts.get(b.agent_id, b.agent_id)}{_state_suffix(b)}" for b in items)
        text += f"; router {router} on {where or 'no agent'}"
    return text


# --- l3ha's own journal ----------------------------------------------------------


def step_text(step: StepEvent, host_of: Callable[[str], str]) -> str | None:
    """Event text for a journal step: moves started and finished; None for the steps between."""
    if step.target:
        where = f"-> {host_of(step.target)}"
    else:
        where = f"off {host_of(step.source)}" if step.source else ""
    what = f"l3ha {step.operation_kind}: router {step.router_id} {step.move_kind}"
    if step.step == "intent":
        return f"{what} started {where}".rstrip()
    if step.step.startswith("done:"):
        outcome = step.step.split(":", 1)[1]
        detail = f" ({step.detail})" if step.detail and outcome != "moved" else ""
        return f"{what} {outcome} {where}".rstrip() + detail
    return None


class JournalEventPoller(EventPoller):
    """Polls l3ha's journal (read-only) and reports moves started and finished.

    Only steps recorded after the poller starts are reported. ``host_of`` turns
    an agent id into a host name for the text (identity by default).
    """

    source, thread_name, poll_at_start = "journal", "l3ha-probe-journal", False

    def __init__(
        self,
        state_dir: Path,
        clock: Clock,
        interval: float = 0.5,
        host_of: Callable[[str], str] | None = None,
    ) -> None:
        super().__init__(clock, interval)
        self._state_dir = state_dir
        self._host_of = host_of or (lambda agent_id: agent_id)
        self._last = 0

    def start(self, sink: EventSink) -> None:
        self._last = self._safely(lambda: last_step_id(self._state_dir), 0)
        super().start(sink)

    @staticmethod
    def _safely(read: Callable[[], T], default: T) -> T:
        try:
            return read()
        except sqlite3.Error:  # locked or half-created: try again next poll
            return default

    def poll_once(self) -> list[Event]:
        """Report the steps recorded since the last poll."""
        no_steps: list[StepEvent] = []
        steps = self._safely(lambda: read_steps_since(self._state_dir, self._last), no_steps)
        if steps:
            self._last = steps[-1].id
        texts = [step_text(step, self._host_of) for step in steps]
        return self._report([text for text in texts if text is not None])
