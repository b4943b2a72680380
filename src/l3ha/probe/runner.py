"""The probe run: samplers on the grid, ordered analysis, events and markers, until stopped.

I/O: network (through the samplers), unix sockets (markers), threads of event
sources, the open-files limit; everything else is delegated. ``Probe.run`` blocks until the duration
ends or ``stop()`` is called (from any thread or a signal handler), waits up to
``drain_limit`` seconds for samples still in flight, and returns a ``ProbeResult``.
``abort()`` ends that wait at once: the samples still in flight are cancelled
and dropped (neither successes nor failures), and the result is returned as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import resource
import threading
import time
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from l3ha.errors import BadInputError
from l3ha.probe.analysis import InOrder, Sample, TargetTracker, Transition
from l3ha.probe.events import Event, EventPoller
from l3ha.probe.marks import MarkServer
from l3ha.probe.samplers import (
    Attempt,
    IcmpEngine,
    IcmpMode,
    SampleError,
    build_attempt,
)
from l3ha.probe.scheduler import Grid, GridStats, run_grid
from l3ha.probe.targets import Target

START_DELAY = 0.05  # first slot this long after start-up, so set-up never makes it late
TICK = 0.5  # how often observers are ticked (live view refresh)
SLOW_FRACTION = 0.5  # a success taking half the timeout or more is counted as slow
DRAIN_GRACE = 0.2  # on stop, wait this much beyond the timeout for samples in flight


@dataclass(frozen=True)
class ProbeConfig:
    """What to sample, how often and for how long."""

    targets: tuple[Target, ...]
    interval: float = 1.0
    timeout: float = 1.0
    duration: float | None = None
    http_ok: tuple[int, int] = (200, 399)
    icmp_mode: IcmpMode = IcmpMode.AUTO
    name: str = "probe"
    mark_sockets: tuple[Path, ...] = ()
    keep_samples: bool = False

    def __post_init__(self) -> None:
        if not self.targets:
            raise BadInputError("the probe needs at least one target")
        for name in ("interval", "timeout", "duration"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value > 0):
                raise BadInputError(f"{name} must be a finite number greater than 0, not {value}")
        if self.duration is not None and self.duration < self.interval:
            raise BadInputError(
                f"duration {self.duration:g} s is shorter than the interval {self.interval:g} s, "
                "so some targets would never be sampled; lengthen the duration or shorten "
                "the interval"
            )

    @property
    def drain_limit(self) -> float:
        """Longest wait, once stopped, for samples in flight (each ends by its timeout)."""
        return self.timeout + DRAIN_GRACE

    @property
    def sockets_needed(self) -> int:
        """File descriptors the samples may hold at once (each lives up to one timeout)."""
        per_target = math.ceil(self.timeout / self.interval) + 1
        return len(self.targets) * per_target + 64


class Observer:
    """Receives what the probe sees, on the probe's event-loop thread. Override what you need."""

    def on_sample(self, sample: Sample) -> None:
        """A sample finished (in completion order)."""

    def on_transition(self, transition: Transition) -> None:
        """A target went down or came back (in each target's start order)."""

    def on_event(self, event: Event) -> None:
        """A control-plane event or marker arrived."""

    def on_tick(self, probe: Probe) -> None:
        """Called every ``TICK`` seconds while running."""


@dataclass
class ProbeResult:
    """Everything a report needs once the probe has stopped."""

    config: ProbeConfig
    origin: float
    origin_wall: float
    until: float
    trackers: list[TargetTracker]
    transitions: list[Transition]
    events: list[Event]
    lateness: array[float]
    grid: GridStats
    samples: list[Sample] = field(default_factory=list)
    dropped: int = 0
    """Samples cancelled in flight by ``abort()``: counted neither as up nor as down."""


class Probe:
    """One probe run. Build, optionally add event sources and observers, then ``run()``."""

    def __init__(
        self,
        config: ProbeConfig,
        sources: Sequence[EventPoller] = (),
        observers: Sequence[Observer] = (),
    ) -> None:
        self.config = config
        self._sources = list(sources)
        self._observers = list(observers)
        raise_fd_limit(config.sockets_needed)
        self._icmp = IcmpEngine(config.icmp_mode)
        self._attempts: list[Attempt] = [
            build_attempt(t, self._icmp, config.http_ok) for t in config.targets
        ]
        slow = config.timeout * SLOW_FRACTION
        self.trackers = [TargetTracker(t.name, slow) for t in config.targets]
        self._order = [InOrder() for _ in config.targets]
        self.transitions: list[Transition] = []
        self.events: list[Event] = []
        self.samples: list[Sample] = []
        self._lateness: array[float] = array("d")
        self._inflight: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._stop_requested = threading.Event()
        self._abort_requested = threading.Event()
        self.dropped = 0
        self.origin = 0.0
        self.origin_wall = 0.0
        self.marks: MarkServer | None = None

    def add_observer(self, observer: Observer) -> None:
        """Add an observer before ``run()``."""
        self._observers.append(observer)

    # --- control from other threads -------------------------------------------------

    def stop(self) -> None:
        """Ask the run to end (thread-safe; safe from a signal handler)."""
        self._stop_requested.set()
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stopping.set)

    def abort(self) -> None:
        """Stop now: cancel and drop the samples in flight (thread-safe; signal-handler safe)."""
        self._abort_requested.set()
        self.stop()
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._cancel_inflight)

    @property
    def in_flight(self) -> int:
        """Samples started and not yet finished."""
        return len(self._inflight)

    def add_event(self, event: Event) -> None:
        """Record an event (thread-safe)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._record_event, event)
                return
        self._record_event(event)

    def mark(self, text: str) -> float:
        """Add a marker now; return its offset from the start (called on the loop)."""
        now = time.monotonic()
        self._record_event(Event(now, time.time(), "mark", text))
        return now - self.origin

    # --- the run --------------------------------------------------------------------

    def run(self) -> ProbeResult:
        """Sample until the duration ends or ``stop()``; return the result."""
        return asyncio.run(self._main())

    async def _main(self) -> ProbeResult:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        if self._stop_requested.is_set():
            self._stopping.set()
        self.origin = time.monotonic() + START_DELAY
        self.origin_wall = time.time() + START_DELAY
        self.marks = MarkServer(list(self.config.mark_sockets), self.mark)
        await self.marks.start()
        for source in self._sources:
            source.start(self.add_event)
        stats = GridStats()
        try:
            await self._sample_until_stopped(stats)
        finally:
            for source in self._sources:
                await asyncio.to_thread(source.stop)
            await self.marks.stop()
            self._icmp.close()
        return self._result(stats)

    async def _sample_until_stopped(self, stats: GridStats) -> None:
        assert self._stopping is not None
        grid = Grid(len(self.config.targets), self.config.interval, self.origin)
        until = None if self.config.duration is None else self.origin + self.config.duration
        scheduler = asyncio.create_task(run_grid(grid, self._launch, stats, until))
        ticker = asyncio.create_task(self._tick())
        stopper = asyncio.create_task(self._stopping.wait())
        await asyncio.wait({scheduler, stopper}, return_when=asyncio.FIRST_COMPLETED)
        for task in (scheduler, stopper, ticker):
            task.cancel()
        for task in (scheduler, ticker):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._drain()

    async def _drain(self) -> None:
        """Wait up to ``drain_limit`` for samples in flight (none after ``abort()``); drop
        the rest."""
        if self._abort_requested.is_set():
            self._cancel_inflight()
        if self._inflight:
            await asyncio.wait(set(self._inflight), timeout=self.config.drain_limit)
        remaining = list(self._inflight)
        self._cancel_inflight()
        await asyncio.gather(*remaining, return_exceptions=True)

    def _cancel_inflight(self) -> None:
        for task in list(self._inflight):
            task.cancel()

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(TICK)
            for observer in self._observers:
                observer.on_tick(self)

    def _launch(self, index: int, seq: int, due: float) -> None:
        if self._abort_requested.is_set():
            return
        task = asyncio.get_running_loop().create_task(self._sample(index, seq, due))
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)

    async def _sample(self, index: int, seq: int, due: float) -> None:
        start = time.monotonic()
        wall = time.time()
        error = ""
        try:
            async with asyncio.timeout(self.config.timeout):
                await self._attempts[index]()
        except TimeoutError:
            error = "timeout"
        except asyncio.CancelledError:
            self._drop(index, seq)
            raise
        except SampleError as exc:
            error = str(exc)
        except Exception as exc:  # a sampler bug must fail one sample, not the probe
            error = f"{type(exc).__name__}: {exc}"
        elapsed = time.monotonic() - start
        name = self.config.targets[index].name
        self._record(index, Sample(name, seq, due, start, wall, elapsed, not error, error))

    # --- recording --------------------------------------------------------------------

    def _record(self, index: int, sample: Sample) -> None:
        self._lateness.append(sample.start - sample.scheduled)
        if self.config.keep_samples:
            self.samples.append(sample)
        for observer in self._observers:
            observer.on_sample(sample)
        self._fold(index, self._order[index].push(sample))

    def _drop(self, index: int, seq: int) -> None:
        """A sample cancelled in flight: not counted; later samples of its target go on."""
        self.dropped += 1
        self._fold(index, self._order[index].skip(seq))

    def _fold(self, index: int, ready: list[Sample]) -> None:
        for ordered in ready:
            change = self.trackers[index].feed(ordered)
            if change is not None:
                self.transitions.append(change)
                for observer in self._observers:
                    observer.on_transition(change)

    def _record_event(self, event: Event) -> None:
        self.events.append(event)
        for observer in self._observers:
            observer.on_event(event)

    def _result(self, stats: GridStats) -> ProbeResult:
        until = stats.stopped_at or time.monotonic()
        return ProbeResult(
            self.config,
            self.origin,
            self.origin_wall,
            until,
            self.trackers,
            self.transitions,
            sorted(self.events, key=lambda e: e.mono),
            self._lateness,
            stats,
            self.samples,
            self.dropped,
        )


def raise_fd_limit(wanted: int) -> None:
    """Raise the soft open-files limit towards ``wanted`` (never above the hard limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
