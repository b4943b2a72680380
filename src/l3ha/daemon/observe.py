"""One cycle's look at the cloud: heartbeats, own verdicts, the gates. I/O: cloud reads, probes.

``Observer.look(now, wall)`` reads the agents (one call), folds them into
the pure health state, refreshes the cached bindings of the agents whose
verdict changed (``WorldCache``), asks the data plane of agents about to be
judged dead (``--dataplane-probe``: any answer makes them PARTITIONED) and
returns a ``View``: the world, each agent's verdict, and every gate that
halts action now (a failed or slow read is a STALE_SNAPSHOT halt: nothing is
ever done on stale data).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from l3ha.cloud.base import Cloud
from l3ha.daemon.dataplane import ProbeSpec, probe_gateways
from l3ha.daemon.world import WorldCache
from l3ha.errors import L3haError
from l3ha.health import (
    HealthPolicy,
    HealthState,
    Verdict,
    dead_candidates,
    fleet_halts,
    mark_partitioned,
    observe,
    snapshot_gate,
    verdicts,
)
from l3ha.model import Halt, Snapshot

log = logging.getLogger("l3ha.watch")

Prober = Callable[[ProbeSpec, Sequence[str], float], list[str]]


@dataclass(frozen=True)
class View:
    """What one cycle saw: the world (None when the read failed), verdicts and halts."""

    snapshot: Snapshot | None
    verdicts: Mapping[str, Verdict] = field(default_factory=dict)
    halts: tuple[Halt, ...] = ()
    read_seconds: float = 0.0
    error: str = ""

    @property
    def halted(self) -> bool:
        return bool(self.halts) or self.snapshot is None

    def hosts(self, verdict: Verdict) -> list[str]:
        """The hosts of the agents with this verdict, sorted."""
        if self.snapshot is None:
            return []
        by_id = self.snapshot.agents_by_id
        return sorted(
            by_id[a].host for a, v in self.verdicts.items() if v is verdict and a in by_id
        )


@dataclass
class ProbeSettings:
    """The data-plane second channel: off when ``spec`` is None."""

    spec: ProbeSpec | None = None
    routers: int = 3
    timeout: float = 1.0


class Observer:
    """Keeps the health state and the world cache between cycles."""

    def __init__(
        self,
        cloud: Cloud,
        policy: HealthPolicy,
        interval: float,
        full_resync: int,
        *,
        probe: ProbeSettings | None = None,
        prober: Prober = probe_gateways,
    ) -> None:
        self.cloud = cloud
        self.world = WorldCache(cloud, full_resync)
        self.prober = prober
        self.state = HealthState()
        self.previous: dict[str, Verdict] = {}
        self.reconfigure(policy, interval, full_resync, probe)

    def reconfigure(
        self,
        policy: HealthPolicy,
        interval: float,
        full_resync: int,
        probe: ProbeSettings | None = None,
    ) -> None:
        """New thresholds (a reload); what was observed so far is kept."""
        self.policy = policy
        self.interval = interval
        self.world.full_resync = max(1, full_resync)
        self.probe = probe or ProbeSettings()

    def look(self, now: float, wall: float, clock_now: Callable[[], float]) -> View:
        """One observation (see the module docstring); ``clock_now`` times the reads."""
        try:
            agents = self.world.read_agents()
        except L3haError as exc:
            return self._stale(clock_now() - now, str(exc))
        self.state = observe(self.state, agents, now, self.policy, wall=wall)
        judged = verdicts(self.state, agents, now, self.policy, self._router_counts())
        changed = {a for a, v in judged.items() if self.previous.get(a) is not v}
        try:
            snapshot = self.world.refresh(agents, changed)
        except L3haError as exc:
            self.world.force_full = True
            return self._stale(clock_now() - now, str(exc))
        judged = self._second_channel(snapshot, judged)
        self.previous = dict(judged)
        read_seconds = clock_now() - now
        halts = fleet_halts(self.state, judged, now, self.policy)
        stale = snapshot_gate(True, read_seconds, self.interval)
        return View(snapshot, judged, tuple(halts) + ((stale,) if stale else ()), read_seconds)

    def _stale(self, seconds: float, error: str) -> View:
        halt = snapshot_gate(False, seconds, self.interval)
        return View(None, dict(self.previous), (halt,) if halt else (), seconds, error)

    def _router_counts(self) -> dict[str, int]:
        snapshot = self.world.snapshot
        if snapshot is None:
            return {}
        return {a.id: len(snapshot.bindings_of_agent(a.id)) for a in snapshot.agents}

    def _second_channel(self, snapshot: Snapshot, judged: dict[str, Verdict]) -> dict[str, Verdict]:
        """DEAD agents whose routers' gateways still answer become PARTITIONED."""
        spec = self.probe.spec
        if spec is None:
            return judged
        answering = []
        for agent_id in dead_candidates(judged):
            addresses = _gateway_sample(snapshot, agent_id, self.probe.routers)
            if addresses and self.prober(spec, addresses, self.probe.timeout):
                answering.append(agent_id)
        return mark_partitioned(judged, answering)


def _gateway_sample(snapshot: Snapshot, agent_id: str, count: int) -> list[str]:
    """Gateway addresses of up to ``count`` of the agent's legacy routers (first address
    each). HA and DVR routers are left out: their gateway may answer from another node."""
    addresses: list[str] = []
    for binding in sorted(snapshot.bindings_of_agent(agent_id), key=lambda b: b.router_id):
        router = snapshot.routers_by_id.get(binding.router_id)
        if router is not None and router.gateway_ips and not (router.ha or router.distributed):
            addresses.append(router.gateway_ips[0])
        if len(addresses) >= count:
            break
    return addresses
