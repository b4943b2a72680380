"""``l3ha evacuate CHASSIS`` on the emulator's ML2/OVN mode, end to end: after a chassis
crash and the evacuation its return fails no router back, and every router keeps two
live chassis; the gates (a live chassis, every chassis dead) and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from l3ha.cli.main import main
from l3ha.cloud.adapter import connect
from l3ha.cloud.ovn import NeutronOvn
from l3ha.emulator import CLOUD_NAME as CLOUD
from l3ha.emulator import Emulator
from l3ha.emulator.ovn_world import MoveKind
from l3ha.journal import Journal, ObjectKind


def groups(emu: Emulator) -> dict[str, dict[str, int]]:
    assert emu.ovn is not None
    return {rid: dict(g.priorities) for rid, g in emu.ovn.ovn.gateways.items()}


def kill(emu: Emulator, ovn: NeutronOvn, name: str) -> None:
    """Crash a chassis; two agent listings a ping interval apart let Neutron see it dead,
    and BFD has failed its routers over by then."""
    emu.faults.kill_chassis(name)
    for _ in range(4):
        emu.advance(1.1)
        ovn.list_chassis()


def evacuate(capsys: pytest.CaptureFixture[str], state: Path, *args: str) -> tuple[int, str]:
    code = main(["evacuate", *args, "--state-dir", str(state), "-f", "json"])
    out, err = capsys.readouterr()
    return code, out + err


def test_evacuated_chassis_returns_without_a_failback_and_routers_keep_two_live_chassis(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    ovn = NeutronOvn(connect(cloud=CLOUD))
    shrunk = sorted(groups(emulator))[:3]
    for rid in shrunk:  # these keep gw-1 and gw-2 only: they need a replacement
        ovn.remove(rid, "gw-3")
    kill(emulator, ovn, "gw-1")
    code, output = evacuate(capsys, tmp_path, "gw-1")
    assert code == 0, output
    summary = json.loads(output[: output.rindex("}") + 1])
    assert summary["counts"]["replaced"] == 3 and summary["counts"]["removed"] == 3
    after = groups(emulator)
    assert all("gw-1" not in g for g in after.values())
    assert all(set(after[rid]) == {"gw-2", "gw-3"} for rid in shrunk)
    assert all(after[rid]["gw-3"] < after[rid]["gw-2"] for rid in shrunk)  # at the bottom
    emulator.faults.revive_chassis("gw-1")
    emulator.advance(5.0)
    assert emulator.ovn is not None
    kinds = [o.kind for g in emulator.ovn.ovn.gateways.values() for o in g.outages]
    assert MoveKind.FAILBACK not in kinds
    assert all(g.bound in ("gw-2", "gw-3") for g in emulator.ovn.ovn.gateways.values())
    assert all(d["reachable"] for d in emulator.dataplane().values())
    journal = Journal(tmp_path)
    operation = journal.operation(summary["operation"])
    assert operation.kind == "ovn-evacuate"
    moves = journal.moves(operation.id)
    assert len(moves) == 6 and all(m.object_kind is ObjectKind.GATEWAY for m in moves)
    assert all(m.finished for m in moves)
    assert journal.unfinished_operations() == []


def test_a_live_chassis_is_refused_and_nothing_changes(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    before = groups(emulator)
    code, output = evacuate(capsys, tmp_path, "gw-1")
    assert code == 3, output
    assert "is alive" in output
    assert groups(emulator) == before


def test_every_chassis_dead_is_the_control_planes_fault(
    emulator: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    before = groups(emulator)
    emulator.faults.sb_outage(60.0)
    ovn = NeutronOvn(connect(cloud=CLOUD))
    ovn.list_chassis()
    code, output = evacuate(capsys, tmp_path, "gw-1")
    assert code == 3, output
    assert "every gateway chassis reads dead" in output
    assert groups(emulator) == before


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("nosuch",), "no gateway chassis"),
        (("gw-1", "--to", "gw-2"), "--to is for L3 agents"),
        (("gw-1", "--backend", "l3-agent", "--min-chassis", "2"), "--min-chassis is for ML2/OVN"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    emulator: Emulator,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    args: tuple[str, ...],
    words: str,
) -> None:
    before = groups(emulator)
    code = main(["evacuate", *args, "--state-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and words in err
    assert groups(emulator) == before
