"""``l3ha watch --dataplane-confirms``: a late agent whose routers' gateways are all dark is
judged dead before ``--dead-after``; never one whose gateways answer (a management
partition, a broker outage), never while a broad outage's gate holds, and an agent with
nothing to probe waits for ``--dead-after``. The daemon's router half on the emulator, in
this process on one ManualClock; the probe asks the emulator's data plane which gateways
forward, and a probe nobody answers waits out its timeout on that clock. Neutron's own
agent_down_time is longer than ``--dead-after`` (as on a real cloud given a shorter
judgement): its ``alive`` flag lags l3ha's verdict, and the evacuation must not wait for it."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from l3ha.clock import ManualClock
from l3ha.cloud.adapter import connect
from l3ha.daemon.dataplane import ProbeSpec
from l3ha.daemon.metrics import WatchMetrics
from l3ha.daemon.settings import load_settings
from l3ha.daemon.watch import Parts, Watcher
from l3ha.emulator import CLOUD_NAME, Emulator
from l3ha.emulator.testing import FAST, emulated_cloud
from l3ha.health import Verdict
from l3ha.journal import Journal

INTERVAL = 0.5
DEAD_AFTER = 6.0
#: Heartbeat values change once a second (stamped to the second): late after 2 s.
REPORT_INTERVAL = 4.0
PROBE_TIMEOUT = 1.0
#: Neutron's agent_down_time in the emulator: its alive flag turns false long after l3ha's.
NEUTRON_DOWN_TIME = 20.0


@dataclass
class Scene:
    emu: Emulator
    clock: ManualClock
    watcher: Watcher
    journal: Journal
    gateway_of: dict[str, str]  # gateway address -> router id
    probed: list[tuple[str, ...]] = field(default_factory=list)

    def probe(self, spec: ProbeSpec, addresses: Sequence[str], timeout: float) -> list[str]:
        """The addresses whose router forwards; none answering costs ``timeout``."""
        self.probed.append(tuple(addresses))
        view = self.emu.dataplane()
        answered = [a for a in addresses if view[self.gateway_of[a]]["reachable"]]
        if not answered:
            self.emu.advance(timeout)
        return answered

    def run(self, seconds: float, until_evacuated: bool = False) -> float | None:
        """Cycles every INTERVAL for ``seconds``; the time of the first evacuation's cycle."""
        end = self.clock.monotonic() + seconds
        while self.clock.monotonic() < end:
            began = self.clock.monotonic()
            self.watcher.cycle()
            if until_evacuated and self.evacuations():
                return began
            self.emu.advance(INTERVAL)
        return None

    def evacuations(self) -> list[str]:
        return [op.id for op in self.journal.history() if op.kind == "evacuate"]

    def hosted(self, host: str) -> set[str]:
        agents = self.emu.agent_ids_by_host()
        snapshot = connect(cloud=CLOUD_NAME).read_snapshot()
        return {b.router_id for b in snapshot.bindings_of_agent(agents[host])}

    def verdict(self, host: str) -> Verdict:
        return self.watcher.main.previous[self.emu.agent_ids_by_host()[host]]


def _scene(tmp_path: Path, confirms: bool, agents: int) -> Iterator[Scene]:
    clock = ManualClock()
    cloud_settings = {
        **FAST, "agents": agents, "routers": 2 * agents, "agent_down_time": NEUTRON_DOWN_TIME
    }  # fmt: skip
    with emulated_cloud(clock, workdir=tmp_path, environ=os.environ, **cloud_settings) as cloud:
        assert cloud.emulator is not None
        neutron = connect(cloud=CLOUD_NAME)
        settings = replace(
            load_settings(None, [], default_files=()),
            state_dir=tmp_path / "state",
            interval=INTERVAL,
            dead_after=DEAD_AFTER,
            report_interval=REPORT_INTERVAL,
            dead_observations=3,
            dataplane_probe="icmp",
            dataplane_confirms=confirms,
            metrics_port=0,
        )
        gateway_of = {r.gateway_ips[0]: r.id for r in neutron.read_snapshot().routers}
        with Journal(settings.state_dir) as journal:
            parts = Parts(settings, neutron, journal, clock, metrics=WatchMetrics("t"))
            scene = Scene(cloud.emulator, clock, Watcher(parts), journal, gateway_of)
            scene.watcher.kind.prober = scene.probe  # type: ignore[union-attr]
            scene.run(3.0)  # every agent observed alive
            assert not scene.probed
            yield scene


@pytest.fixture
def confirming(tmp_path: Path) -> Iterator[Scene]:
    yield from _scene(tmp_path, confirms=True, agents=3)


@pytest.mark.parametrize(
    ("confirms", "earliest", "latest"),
    [
        # late after 2 s of silence (up to 1 s of it before the kill), 3 late observations
        # 0.5 s apart, one dark probe of 1 s: well before dead_after
        (True, 2.0, DEAD_AFTER - 1.5),
        # the heartbeat alone: silence beyond dead_after, then the veto's dark probe
        (False, DEAD_AFTER - 1.0, DEAD_AFTER + 2 * INTERVAL + PROBE_TIMEOUT),
    ],
)
def test_a_dark_late_agent_is_dead_before_dead_after_only_when_the_data_plane_confirms(
    tmp_path: Path, confirms: bool, earliest: float, latest: float
) -> None:
    for scene in _scene(tmp_path, confirms, agents=3):
        victims = scene.hosted("net-1")
        assert victims
        scene.emu.faults.kill_agent("net-1")
        killed = scene.clock.monotonic()
        evacuated = scene.run(3 * DEAD_AFTER, until_evacuated=True)
        assert evacuated is not None, "never evacuated"
        assert earliest <= evacuated - killed <= latest
        assert not scene.hosted("net-1")
        live = scene.hosted("net-2") | scene.hosted("net-3")
        assert victims <= live


def test_a_late_agent_whose_gateways_answer_is_never_confirmed_dead(confirming: Scene) -> None:
    """A management partition (the broker outage of one node): it forwards, nothing moves."""
    before = confirming.hosted("net-2")
    confirming.emu.faults.mgmt_partition("net-2", 10 * DEAD_AFTER)
    confirming.run(4 * DEAD_AFTER)
    assert confirming.probed, "the late agent was never probed"
    assert confirming.evacuations() == []
    assert confirming.hosted("net-2") == before
    assert confirming.verdict("net-2") is Verdict.PARTITIONED  # silent beyond dead_after


def test_no_early_verdict_while_a_broad_outage_halts(tmp_path: Path) -> None:
    """Three of four nodes dark at once: the fleet gate holds; nothing is confirmed or moved."""
    for scene in _scene(tmp_path, confirms=True, agents=4):
        for host in ("net-1", "net-2", "net-3"):
            scene.emu.faults.kill_agent(host)
        scene.run(DEAD_AFTER - 1.0)  # late, not yet silent for dead_after
        assert scene.probed == []  # no candidate to confirm: the gate applies first
        scene.run(2 * DEAD_AFTER)
        assert scene.evacuations() == []
        kinds = {op.kind for op in scene.journal.history()}
        assert kinds == {"halt"}
        assert all(scene.verdict(h) is not Verdict.ALIVE for h in ("net-1", "net-2", "net-3"))


def test_an_agent_with_no_gateway_to_probe_keeps_its_verdict(confirming: Scene) -> None:
    kind = confirming.watcher.kind
    world = kind.current()
    assert world is not None
    agent = confirming.emu.agent_ids_by_host()["net-1"]
    unrouted = replace(world, bindings=tuple(b for b in world.bindings if b.agent_id != agent))
    judged = {agent: Verdict.SUSPECT}
    assert kind.second_channel(unrouted, judged, [agent]) == judged  # type: ignore[arg-type]
    assert confirming.probed == []
    assert kind.second_channel(world, judged, [agent]) == judged  # its gateways answer
    assert confirming.probed

