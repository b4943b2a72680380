"""What the gateway kind's recovery does with a run killed mid-move, on the emulator's
ML2/OVN mode on a manual clock: the move closed as found, the replacement added by the
next run. (The semantics every kind shares, budget, stop request, dry run, journal
failure, re-check, exit codes, are pinned for gateways in ``tests/engine``.)"""

from __future__ import annotations

from pathlib import Path

from l3ha.clock import SystemClock
from l3ha.cloud.adapter import connect
from l3ha.cloud.ovn import NeutronOvn
from l3ha.emulator import CLOUD_NAME as CLOUD
from l3ha.emulator import Emulator
from l3ha.executor import ExecutorOptions
from l3ha.executor.gateway_steps import journal_move
from l3ha.journal import Journal, MoveStep
from l3ha.operations.ovn import GatewayAction, GatewayContext, GatewayRequest, GatewayResult
from l3ha.planner.gateway import GatewayMove, GatewayMoveKind

OPTIONS = ExecutorOptions(concurrency=1, port_poll_interval=0.05, port_timeout=20.0)


def dead_gw1(emu: Emulator) -> NeutronOvn:
    """gw-1 crashed and read dead; routers r[:3] keep gw-1 and gw-2 only."""
    ovn = NeutronOvn(connect(cloud=CLOUD))
    for rid in sorted(routers_with(emu, "gw-1"))[:3]:
        ovn.remove(rid, "gw-3")
    emu.faults.kill_chassis("gw-1")
    for _ in range(4):
        emu.advance(1.1)
        ovn.list_chassis()
    return ovn


def routers_with(emu: Emulator, chassis: str) -> set[str]:
    assert emu.ovn is not None
    return {rid for rid, g in emu.ovn.ovn.gateways.items() if chassis in g.priorities}


def run(
    ovn: NeutronOvn, journal: Journal | None, notices: list[str], **how: object
) -> GatewayResult:
    from l3ha.operations.ovn import evacuate_or_drain

    stop = how.pop("should_stop", None)
    ctx = GatewayContext(ovn, journal, SystemClock(), notices.append, should_stop=stop)  # type: ignore[arg-type]
    how.setdefault("execution", OPTIONS)
    return evacuate_or_drain(ctx, GatewayRequest(GatewayAction.EVACUATE, "gw-1", **how))  # type: ignore[arg-type]


def test_a_run_killed_mid_move_is_closed_by_the_next_which_finishes_the_job(
    emulator: Emulator, tmp_path: Path
) -> None:
    ovn = dead_gw1(emulator)
    router = sorted(routers_with(emulator, "gw-1"))[0]
    move = GatewayMove(router, GatewayMoveKind.REPLACE, "gw-1", "gw-3", 0, "evacuate")
    with Journal(tmp_path) as journal:
        op, (move_id,) = journal.begin_operation(
            "ovn-evacuate", {"command": "evacuate"}, [journal_move(move)]
        )
        journal.record_step(move_id, MoveStep.INTENT, target="gw-3")
        ovn.remove(router, "gw-1")  # then the process died before adding gw-3
        journal.record_step(move_id, MoveStep.UNBOUND)
        journal.abandon(op)
    notices: list[str] = []
    with Journal(tmp_path) as journal:
        result = run(ovn, journal, notices)
        assert journal.unfinished_operations() == []
        (closed,) = [m for m in journal.moves(op) if m.id == move_id]
        assert closed.outcome == "skipped"
    assert result.exit_code == 0, result.problems
    assert any(f"router {router} left as found" in n for n in notices)
    assert routers_with(emulator, "gw-1") == set()
    # the killed run removed gw-1 but never added gw-3: the next run added it
    assert "gw-3" in emulator.ovn.ovn.gateways[router].priorities  # type: ignore[union-attr]
