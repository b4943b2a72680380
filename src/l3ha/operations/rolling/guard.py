"""The tenant-traffic guard of a rolling run: the probe, running in the background.

I/O: a thread running ``l3ha.probe``'s ``Probe`` (network samples); its
result goes to the caller, who writes the report. The targets are any of ``l3ha probe``'s
(ICMP, TCP, HTTP, DNS) and, optionally, the data-plane addresses of the
routers (``router_targets``: each router's external gateway address, by TCP
port or ICMP). The guard answers the questions the run asks between steps:
the longest outage seen (closed or still going on) overall or within one
host's window, and whether a router's address has answered since a moment.
"""

from __future__ import annotations

import threading
import time

from l3ha.model import Snapshot
from l3ha.probe.analysis import Change, Sample, Transition
from l3ha.probe.events import Event
from l3ha.probe.runner import Observer, Probe, ProbeConfig, ProbeResult
from l3ha.probe.targets import Target, TargetKind

JOIN_LIMIT = 10.0  # seconds to wait for the probe thread to finish its report


def router_targets(snapshot: Snapshot, kind: TargetKind, port: int) -> dict[str, Target]:
    """Per router id, a target for its first external gateway address (TCP ``port`` or ICMP)."""
    targets: dict[str, Target] = {}
    for router in sorted(snapshot.routers, key=lambda r: r.id):
        if router.gateway_ips:
            address = router.gateway_ips[0]
            tcp_port = port if kind is TargetKind.TCP else 0
            targets[router.id] = Target(kind, f"router-{router.id}", address, tcp_port)
    return targets


class _OutageLog(Observer):
    """What the probe has seen, kept for questions from other threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.open: dict[str, float] = {}
        self.closed: list[tuple[str, float, float]] = []
        self.last_ok: dict[str, float] = {}

    def on_sample(self, sample: Sample) -> None:
        if sample.ok:
            with self._lock:
                self.last_ok[sample.target] = max(
                    self.last_ok.get(sample.target, 0.0), sample.start
                )

    def on_transition(self, transition: Transition) -> None:
        with self._lock:
            if transition.change is Change.DOWN:
                self.open[transition.target] = transition.mono
            else:
                start = self.open.pop(transition.target, transition.mono - transition.downtime)
                self.closed.append((transition.target, start, transition.mono))

    def longest(self, since: float, until: float) -> tuple[float, str]:
        """The longest outage overlapping [since, until] (ongoing ones count to ``until``)."""
        with self._lock:
            spans = [*self.closed, *((t, s, until) for t, s in self.open.items())]
        best = (0.0, "")
        for target, start, end in spans:
            if end >= since and start <= until and end - start > best[0]:
                best = (end - start, target)
        return best

    def answered_since(self, target: str, moment: float) -> bool:
        with self._lock:
            return self.last_ok.get(target, 0.0) >= moment and target not in self.open


class TrafficGuard:
    """The probe of a run (see the module docstring); ``start`` then ``stop``."""

    def __init__(self, config: ProbeConfig, routers: dict[str, Target]) -> None:
        self.config = config
        self.routers = routers
        self._log = _OutageLog()
        self._probe = Probe(config, observers=[self._log])
        self._thread: threading.Thread | None = None
        self._result: ProbeResult | None = None
        self._error: BaseException | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="rolling-probe", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._result = self._probe.run()
        except BaseException as exc:  # reported by stop(), never lost in the thread
            self._error = exc

    def stop(self) -> ProbeResult | None:
        """Stop sampling; the probe's result (None if it failed)."""
        self._probe.stop()
        if self._thread is not None:
            self._thread.join(timeout=self.config.drain_limit + JOIN_LIMIT)
        return self._result

    @property
    def error(self) -> BaseException | None:
        return self._error

    def mark(self, text: str) -> None:
        """A marker on the probe's timeline (a step starting)."""
        self._probe.add_event(Event(time.monotonic(), time.time(), "rolling", text))

    def longest(self, since: float = 0.0, until: float | None = None) -> tuple[float, str]:
        """Seconds and target of the longest outage overlapping the window (monotonic)."""
        return self._log.longest(since, time.monotonic() if until is None else until)

    def router_answered_since(self, router_id: str, moment: float) -> bool | None:
        """Whether the router's address answered after ``moment``; None if not watched."""
        target = self.routers.get(router_id)
        if target is None:
            return None
        return self._log.answered_since(target.name, moment)


def probe_config(
    targets: list[Target], routers: dict[str, Target], interval: float, timeout: float, name: str
) -> ProbeConfig:
    """The probe of a run: the given targets, then the routers' addresses."""
    return ProbeConfig(
        targets=(*targets, *routers.values()), interval=interval, timeout=timeout, name=name
    )
