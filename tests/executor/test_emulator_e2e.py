"""The executor end to end: adapter over openstacksdk against the running emulator.

Each test starts a small emulator (fast heartbeats, fast agent processing) on
loopback, kills or disturbs agents, runs the executor and then checks the
cloud itself: where every router is bound and whether its ports are ACTIVE.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tests.executor.emulator_env import (
    Env,
    assert_hosted_and_active,
    replica_replacements,
    routers_on,
    start_env,
    wait_until,
)

from l3ha.clock import SystemClock
from l3ha.executor import (
    Executor,
    ExecutorOptions,
    MoveOutcome,
    Progress,
    RecoveryAction,
    recover,
    snapshot_candidates,
)
from l3ha.journal import Journal, MoveStep
from l3ha.model import Move, MoveKind, Plan

CHILD = Path(__file__).with_name("evacuate_child.py")


def test_evacuating_a_killed_agent_leaves_every_port_active(env: Env) -> None:
    source = env.kill("net-1")
    plan = env.evacuation("net-1", canary=2)
    executor, journal = env.executor()
    result = executor.run(plan)
    assert result.ok and result.counts()["moved"] == len(plan.moves) == 6
    assert_hosted_and_active(env, [m.router_id for m in plan.moves], {source})
    assert journal.unfinished_operations() == []
    assert all(m.outcome == "moved" for m in journal.moves(result.operation_id or 0))


def test_source_coming_back_mid_evacuation_stops_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = start_env(tmp_path, monkeypatch, routers=40)
    try:
        _source_comes_back(env)
    finally:
        env.emu.stop()


def _source_comes_back(env: Env) -> None:
    source = env.kill("net-1")
    plan = env.evacuation("net-1")
    revived: list[bool] = []

    def revive_after_first(progress: Progress) -> None:
        if not revived:
            revived.append(True)
            env.emu.faults.revive_agent("net-1")
            wait_until(lambda: env.cloud.get_agent(source).alive, what="net-1 alive")

    executor, _ = env.executor(concurrency=1, rate=4.0, burst=1)
    result = executor.run(plan, progress=revive_after_first)
    outcomes = [r.outcome for r in result.results]
    skipped = [r.router_id for r in result.results if r.outcome is MoveOutcome.SKIPPED]
    assert outcomes[0] is MoveOutcome.MOVED
    assert (
        len(plan.moves) == 10
        and len(skipped) >= 5
        and set(outcomes) <= {MoveOutcome.MOVED, MoveOutcome.SKIPPED}
    )
    assert all("alive again" in r.reason for r in result.results if r.router_id in skipped)
    still_there = set(routers_on(env.cloud.read_snapshot(), source))
    assert set(skipped) <= still_there  # not touched


def test_injected_api_errors_are_retried_and_every_router_is_hosted(env: Env) -> None:
    source = env.kill("net-1")
    plan = env.evacuation("net-1")
    env.emu.faults.api_errors(0.2, 500)
    executor, _ = env.executor(backoff=0.01, backoff_max=0.05)  # the adapter retries
    result = executor.run(plan)
    env.emu.faults.api_errors(0.0, 500)
    assert result.ok, result.summary()
    assert result.counts()["moved"] == len(plan.moves)
    assert_hosted_and_active(env, [m.router_id for m in plan.moves], {source})


def test_a_refusing_target_hands_the_router_to_the_next_candidate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = start_env(tmp_path, monkeypatch, agents=3, routers=6, dvr_routers=2)
    try:
        snapshot = env.cloud.read_snapshot()
        dvr = [r.id for r in snapshot.routers if r.distributed]
        legacy_target = env.agent_id("net-2")
        moves = []
        for router_id in dvr:  # planned onto a legacy agent: Neutron answers 409
            (binding,) = snapshot.bindings_of_router(router_id)
            moves.append(Move(router_id, MoveKind.MOVE, legacy_target, binding.agent_id, "test"))
        executor, _ = env.executor()
        result = executor.run(
            Plan("migrate", tuple(moves)), fallback_targets=snapshot_candidates(snapshot)
        )
        assert result.ok, result.summary()
        after = env.cloud.read_snapshot()
        for res in result.results:
            assert res.outcome is MoveOutcome.MOVED
            (binding,) = after.bindings_of_router(res.router_id)
            assert after.agents_by_id[binding.agent_id].mode.value == "dvr_snat"
            assert binding.agent_id != res.move.source
    finally:
        env.emu.stop()


def test_a_disabled_target_is_passed_over(env: Env) -> None:
    source = env.kill("net-1")
    plan = env.evacuation("net-1", targets=[env.agent_id("net-2")])
    env.cloud.set_admin_state(env.agent_id("net-2"), False)
    executor, _ = env.executor()
    result = executor.run(plan, fallback_targets=snapshot_candidates(env.cloud.read_snapshot()))
    assert result.ok
    assert {r.target for r in result.results} <= {env.agent_id("net-3"), env.agent_id("net-4")}
    assert_hosted_and_active(env, [m.router_id for m in plan.moves], {source})


def test_dry_run_changes_nothing(env: Env) -> None:
    env.kill("net-1")
    plan = env.evacuation("net-1")
    before = env.cloud.read_snapshot()
    options = ExecutorOptions(dry_run=True)
    result = Executor(env.cloud, None, SystemClock(), options).run(plan)
    assert [r.outcome for r in result.results] == [MoveOutcome.PLANNED] * len(plan.moves)
    after = env.cloud.read_snapshot()
    assert set(before.bindings) == set(after.bindings)
    assert not (env.tmp_path / "state").exists()


def test_kill_9_in_the_middle_then_recovery_leaves_no_router_unhosted(env: Env) -> None:
    source = env.kill("net-1")
    state = env.tmp_path / "crash-state"
    child = subprocess.Popen([sys.executable, str(CHILD), "net-1", str(state), "0.5"])
    try:

        def some_router_unbound() -> bool:
            if child.poll() is not None:
                raise AssertionError(f"child ended early with {child.returncode}")
            if not (state / "journal.sqlite").exists():
                return False
            with Journal(state) as journal:
                ops = journal.history(last=1)
                return bool(ops) and any(
                    m.step is MoveStep.UNBOUND for m in journal.moves(ops[0].id)
                )

        wait_until(some_router_unbound, what="a router unbound by the child")
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    assert child.returncode == -signal.SIGKILL
    assert env.cloud.read_snapshot().unhosted_routers()  # the crash left a gap
    with Journal(state) as journal:
        (interrupted,) = journal.unfinished_operations()
        open_moves = [m for m in journal.moves(interrupted.id) if not m.finished]
        results = recover(env.cloud, journal, SystemClock())
        assert len(results) == len(open_moves)
        assert all(r.ok for r in results), [r.as_row() for r in results]
        assert RecoveryAction.BOUND_TARGET in {r.action for r in results}
        assert journal.unfinished_operations() == []
    snapshot = env.cloud.read_snapshot()
    assert snapshot.unhosted_routers() == ()
    for result in results:
        if result.action is not RecoveryAction.LEFT_HOSTED:
            (binding,) = snapshot.bindings_of_router(result.router_id)
            assert binding.agent_id != source
    # the next evacuation finishes the job from the cloud's state
    executor, _ = env.executor()
    assert executor.run(env.evacuation("net-1")).ok
    assert routers_on(env.cloud.read_snapshot(), source) == []


def test_ha_replica_on_a_dead_agent_is_replaced_make_before_break(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = start_env(
        tmp_path, monkeypatch, agents=4, routers=8, ha_routers=8, busy=0, ha_takeover_time=0.3
    )
    try:
        source = env.kill("net-1")
        snapshot = env.cloud.read_snapshot()
        moves = replica_replacements(snapshot, source, "replace")
        assert moves
        executor, _ = env.executor()
        result = executor.run(Plan("repair", tuple(moves)))
        assert result.ok and {r.outcome for r in result.results} == {MoveOutcome.MOVED}
        after = env.cloud.read_snapshot()
        for add in moves[::2]:
            hosts = {b.agent_id for b in after.bindings_of_router(add.router_id)}
            assert source not in hosts and add.target in hosts and len(hosts) == 2
            new_host = after.agents_by_id[add.target or ""].host
            ha_ports = [
                p
                for p in env.cloud.router_ports(add.router_id)
                if p.device_owner == "network:router_ha_interface" and p.host == new_host
            ]
            assert ha_ports and all(p.status == "ACTIVE" for p in ha_ports)
    finally:
        env.emu.stop()
