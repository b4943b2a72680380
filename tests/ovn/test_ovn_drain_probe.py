"""``l3ha drain CHASSIS --probe`` on the emulator's ML2/OVN mode, on the real clock: each moved
router must answer on its gateway address again before its move counts as done.

The emulator's gateway listeners (one loopback TCP listener per router, open while its
gateway forwards) are the data plane; a graceful move leaves a gateway dark 1.0 s. With the
probe the canary router answers again before any other router moves, a move holds its
target's in-flight slot until its router answers (so ``per_target_inflight`` 1 never has
two gateways dark on one chassis at once), and a data plane that never answers stops the
drain after the canary with a problem, exit 1."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from l3ha.cli.main import main
from l3ha.clock import SystemClock
from l3ha.cloud.adapter import connect
from l3ha.cloud.ovn import NeutronOvn
from l3ha.daemon.dataplane import ProbeSpec, probe_gateways
from l3ha.emulator import CLOUD_NAME, Emulator
from l3ha.emulator.ovn_world import Outage
from l3ha.emulator.testing import FAST, Clocking, emulated_cloud
from l3ha.executor import ExecutorOptions
from l3ha.journal import Journal
from l3ha.operations.ovn import GatewayAction, GatewayContext, GatewayRequest, evacuate_or_drain
from l3ha.probe.targets import TargetKind

ROUTERS = 9
OVN: dict[str, Any] = {
    "ovn": True,
    "ovn_chassis": 3,
    "routers": ROUTERS,
    "dataplane_listeners": ROUTERS,
    **FAST,
}


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    with emulated_cloud(Clocking.REAL, workdir=tmp_path, environ=os.environ, **OVN) as cloud:
        assert cloud.emulator is not None
        yield cloud.emulator


def port_of(emu: Emulator) -> int:
    return int(emu.state()["dataplane_port"])


def new_outages(emu: Emulator, before: dict[str, int]) -> dict[str, list[Outage]]:
    """Each router's gateway outages since ``before`` (router -> outages counted then)."""
    assert emu.ovn is not None
    with emu.world.lock:
        return {
            rid: list(g.outages)[before.get(rid, 0) :] for rid, g in emu.ovn.ovn.gateways.items()
        }


def outage_counts(emu: Emulator) -> dict[str, int]:
    assert emu.ovn is not None
    with emu.world.lock:
        return {rid: len(g.outages) for rid, g in emu.ovn.ovn.gateways.items()}


def primaries_of(emu: Emulator, chassis: str) -> set[str]:
    assert emu.ovn is not None
    with emu.world.lock:
        return {rid for rid, g in emu.ovn.ovn.gateways.items() if g.bound == chassis}


def test_the_canary_answers_again_before_any_other_router_moves(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    victims = primaries_of(emulator, "gw-1")
    assert len(victims) >= 2
    before = outage_counts(emulator)
    argv = ["drain", "gw-1", "--probe", f"tcp:{port_of(emulator)}", "--state-dir", str(tmp_path)]
    code = main(argv)
    _, err = capsys.readouterr()
    assert code == 0, err
    assert primaries_of(emulator, "gw-1") == set()
    outages = sorted(
        (o for rid in victims for o in new_outages(emulator, before)[rid]), key=lambda o: o.start
    )
    assert len(outages) == len(victims)  # each moved once
    canary, *rest = outages
    assert canary.end - canary.start == pytest.approx(1.0, abs=0.3)
    assert all(canary.end <= o.start for o in rest)
    # every gateway answers once the drain has returned: it waited for each of them
    assert all(d["reachable"] for d in emulator.dataplane().values())


def test_a_move_holds_its_target_until_the_router_answers(
    emulator: Emulator, tmp_path: Path
) -> None:
    """per_target_inflight 1: a chassis takes over one gateway at a time, the next only once
    the last answers again, so no two outages on one target overlap."""
    victims = primaries_of(emulator, "gw-1")
    before = outage_counts(emulator)
    spec = ProbeSpec(TargetKind.TCP, port_of(emulator))
    options = ExecutorOptions(per_target_inflight=1, concurrency=8)
    request = GatewayRequest(
        GatewayAction.DRAIN, "gw-1", execution=options, probe=lambda a: probe_gateways(spec, a)
    )
    with Journal(tmp_path / "state") as journal:
        ctx = GatewayContext(NeutronOvn(connect(cloud=CLOUD_NAME)), journal, SystemClock(), print)
        result = evacuate_or_drain(ctx, request)
    assert result.exit_code == 0, result.problems
    (step,) = result.executed
    moved = {r.move.router_id: r.target for r in step.run.results if r.outcome == "moved"}
    assert set(moved) == victims
    outages = new_outages(emulator, before)
    for target in set(moved.values()):
        spans = sorted((outages[rid][0] for rid, t in moved.items() if t == target),
                       key=lambda o: o.start)  # fmt: skip
        for earlier, later in itertools.pairwise(spans):
            assert earlier.end <= later.start, f"two gateways dark on {target} at once"


def test_a_data_plane_that_never_answers_stops_the_drain_after_the_canary(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    victims = primaries_of(emulator, "gw-1")
    silent_port = 1  # nothing listens there: every probe is refused
    argv = ["drain", "gw-1", "--probe", f"tcp:{silent_port}", "--port-timeout", "2",
            "--state-dir", str(tmp_path)]  # fmt: skip
    code = main(argv)
    _, err = capsys.readouterr()
    assert code == 1
    assert "not answering after the move" in err
    assert len(primaries_of(emulator, "gw-1")) == len(victims) - 1  # the canary alone moved


@pytest.mark.parametrize(
    ("probe", "message"),
    [
        ("tcp:0", "out of range"),
        ("udp:53", "is not 'tcp:PORT' or 'icmp'"),
    ],
)
def test_a_bad_probe_is_one_line_exit_2_and_changes_nothing(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path, probe: str, message: str
) -> None:
    before = primaries_of(emulator, "gw-1")
    code = main(["drain", "gw-1", "--probe", probe, "--state-dir", str(tmp_path)])
    _, err = capsys.readouterr()
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1
    assert primaries_of(emulator, "gw-1") == before


def test_probe_on_an_l3_agent_cloud_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with emulated_cloud(Clocking.MANUAL, workdir=tmp_path, environ=os.environ, **FAST):
        code = main(["drain", "net-1", "--probe", "icmp", "--state-dir", str(tmp_path)])
    _, err = capsys.readouterr()
    assert code == 2
    assert (
        err.strip()
        == "l3ha: error: --probe is for ML2/OVN gateway chassis: this cloud has L3 agents"
    )
