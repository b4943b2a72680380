"""The DHCP executor's safety behaviour against the real-time emulator: fallback targets,
a target that never sets the network up, a source that comes back, dry run, and an
interrupted DHCP operation closed from the cloud's state."""

from __future__ import annotations

import pytest
from tests.dhcp.conftest import DhcpCloudEnv, dead, wait_for

from l3ha.cli.main import main
from l3ha.clock import SystemClock
from l3ha.dhcp_model import DhcpMove, DhcpMoveKind, DhcpPlan
from l3ha.executor import ExecutorOptions
from l3ha.executor.dhcp import DhcpExecutor, DhcpOutcome, DhcpRunResult
from l3ha.executor.dhcp_steps import journal_move
from l3ha.journal import Journal, MoveStep, OperationStatus
from l3ha.operations.dhcp import fallback_targets
from l3ha.planner.dhcp import DhcpPolicy, plan_dhcp_evacuate

OPTIONS = ExecutorOptions(port_timeout=20, port_poll_interval=0.05)


def _evacuation(env: DhcpCloudEnv, host: str) -> tuple[DhcpPlan, str]:
    env.emu.faults.kill_agent(host)
    wait_for(lambda: dead(env, host), 10, f"{host} reported dead")
    snap = env.snapshot()
    source = snap.find_agent(host).id
    return plan_dhcp_evacuate(snap, source, DhcpPolicy()), source


def _run(
    env: DhcpCloudEnv, plan: DhcpPlan, options: ExecutorOptions = OPTIONS
) -> tuple[DhcpRunResult, Journal]:
    snap = env.snapshot()
    journal = Journal(env.state_dir)
    executor = DhcpExecutor(env.dhcp, journal, SystemClock(), options)
    result = executor.run(
        plan,
        snap.agents_by_id,
        fallbacks=fallback_targets(snap, DhcpPolicy()),
        require_dead_source=True,
    )
    return result, journal


def test_a_target_disabled_after_planning_is_replaced_by_a_fallback(dhcp_env: DhcpCloudEnv) -> None:
    plan, source = _evacuation(dhcp_env, "net-1")
    first_target = plan.moves[0].target
    assert first_target is not None
    dhcp_env.dhcp.set_dhcp_agent_state(first_target, False, None)
    result, journal = _run(dhcp_env, plan)
    assert result.ok and {r.outcome for r in result.results} == {DhcpOutcome.MOVED}
    assert first_target not in {r.target for r in result.results}
    after = dhcp_env.snapshot()
    assert after.networks_of_agent(source) == ()
    assert journal.operation(result.operation_id or 0).status is OperationStatus.DONE


def test_a_target_that_never_sets_the_network_up_leaves_the_source_copy(
    dhcp_env: DhcpCloudEnv,
) -> None:
    plan, source = _evacuation(dhcp_env, "net-1")
    doomed = plan.moves[0].target or ""
    doomed_host = dhcp_env.snapshot().agents_by_id[doomed].host
    # still reported alive for a moment: the add is taken
    dhcp_env.emu.faults.kill_agent(doomed_host)
    options = ExecutorOptions(port_timeout=1.5, port_poll_interval=0.05)
    result, _ = _run(dhcp_env, plan, options)
    pending = [r for r in result.results if r.outcome is DhcpOutcome.PENDING]
    assert pending and all(r.target == doomed for r in pending)
    assert all("source copy is kept" in r.reason for r in pending)
    after = dhcp_env.snapshot()
    for r in pending:  # never removed from the source while the new copy is not serving
        assert source in after.agents_of_network(r.move.network_id)
    moved = [r for r in result.results if r.outcome is DhcpOutcome.MOVED]
    assert all(source not in after.agents_of_network(r.move.network_id) for r in moved)


def test_a_source_that_comes_back_keeps_its_networks(dhcp_env: DhcpCloudEnv) -> None:
    plan, source = _evacuation(dhcp_env, "net-1")
    dhcp_env.emu.faults.revive_agent("net-1")
    wait_for(lambda: not dead(dhcp_env, "net-1"), 10, "net-1 alive again")
    result, _ = _run(dhcp_env, plan)
    assert {r.outcome for r in result.results} == {DhcpOutcome.SKIPPED}
    assert all("alive and enabled again" in r.reason for r in result.results)
    assert set(dhcp_env.snapshot().networks_of_agent(source)) == {m.network_id for m in plan.moves}


def test_a_dry_run_writes_nothing_and_needs_no_journal(dhcp_env: DhcpCloudEnv) -> None:
    plan, _ = _evacuation(dhcp_env, "net-2")
    before = dhcp_env.snapshot().bindings
    executor = DhcpExecutor(dhcp_env.dhcp, None, SystemClock(), ExecutorOptions(dry_run=True))
    result = executor.run(plan, dhcp_env.snapshot().agents_by_id)
    assert result.dry_run and {r.outcome for r in result.results} == {DhcpOutcome.PLANNED}
    assert dhcp_env.snapshot().bindings == before
    assert not (dhcp_env.state_dir / "journal.sqlite").exists()


def test_an_interrupted_dhcp_operation_is_closed_by_the_next_dhcp_action_only(
    dhcp_env: DhcpCloudEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = dhcp_env.snapshot()
    source = snap.find_agent("net-1").id
    network = sorted(snap.networks_of_agent(source))[0]
    target = snap.find_agent("net-2").id
    move = DhcpMove(network, DhcpMoveKind.MOVE, target, source, "evacuate net-1", True)
    with Journal(dhcp_env.state_dir) as journal:  # a process killed after adding the copy
        op_id, (move_id,) = journal.begin_operation("dhcp-evacuate", {}, [journal_move(move)])
        journal.record_step(move_id, MoveStep.INTENT, target=target)
        dhcp_env.dhcp.add_network_to_agent(network, target)
        journal.record_step(move_id, MoveStep.BOUND, target=target)
    assert main(["repair", "--dry-run"]) == 0  # the router repair leaves it alone
    with Journal(dhcp_env.state_dir) as journal:
        assert [op.id for op in journal.unfinished_operations()] == [op_id]
    capsys.readouterr()
    assert main(["dhcp", "repair", "--trim", "--port-timeout", "20"]) == 0
    assert f"interrupted DHCP operation {op_id}: network {network} left_as_found" in (
        capsys.readouterr().err
    )
    with Journal(dhcp_env.state_dir) as journal:
        assert journal.unfinished_operations() == []
        assert journal.operation(op_id).status is OperationStatus.RECOVERED
    # nothing was written for it; --trim then removed the extra copy the crash left
    assert len(dhcp_env.hosts_of(network)) == 1


def test_a_network_without_dhcp_is_removed_from_a_dead_agent_never_waited_for(
    dhcp_env: DhcpCloudEnv,
) -> None:
    # The real stack showed Neutron scheduling the external network on a DHCP agent; no
    # agent gets a DHCP port for it (the emulator's neither), so a make-before-break move
    # waited out its timeout there: it is only removed, never moved.
    snap = dhcp_env.snapshot()
    external = next(n.id for n in snap.networks if not n.needs_dhcp)
    net1 = snap.find_agent("net-1").id
    dhcp_env.dhcp.add_network_to_agent(external, net1)
    plan, _ = _evacuation(dhcp_env, "net-1")
    result, _ = _run(dhcp_env, plan)
    by_network = {r.move.network_id: r for r in result.results}
    assert by_network[external].outcome is DhcpOutcome.REMOVED
    assert result.ok and external not in dhcp_env.networks_on("net-1")
    assert dhcp_env.hosts_of(external) == set()
    assert not [p for p in dhcp_env.snapshot().ports if p.network_id == external]
