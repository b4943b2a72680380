"""The executor's source re-check and salvage, end to end against the running emulator.

A source is "back" only when it is alive AND enabled: a live but disabled
agent has torn its routers down, so evacuating it must move them; ``--force``
(``require_dead_source=False``) moves the routers of a live, enabled agent.
HA replicas stop being replaced the moment the source is back (a replica
already added is kept next to the old one). A move cut by an API outage in
its middle is put back on an agent once the API answers again.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.executor.emulator_env import (
    Env,
    TriggerCloud,
    assert_hosted_and_active,
    replica_replacements,
    routers_on,
    start_env,
    wait_until,
)

from l3ha.executor import MoveOutcome
from l3ha.model import Plan, Snapshot
from l3ha.planner import PlacementPolicy, plan_evacuate
from l3ha.weights import WeightPolicy


def evacuation_plan(env: Env, host: str) -> Plan:
    plan = plan_evacuate(
        env.cloud.read_snapshot(), env.agent_id(host), PlacementPolicy(), WeightPolicy()
    )
    assert isinstance(plan, Plan) and plan.moves and not plan.unplaceable
    return plan


def assert_emptied(env: Env, source: str, before: Snapshot) -> None:
    """Nothing left on the source; legacy routers ACTIVE elsewhere, HA routers kept 2 replicas."""
    after = env.cloud.read_snapshot()
    assert routers_on(after, source) == []
    moved = routers_on(before, source)
    legacy = [r for r in moved if not before.routers_by_id[r].ha]
    assert_hosted_and_active(env, legacy, {source})
    for router_id in set(moved) - set(legacy):
        assert len(after.bindings_of_router(router_id)) == 2


def test_evacuating_a_live_but_disabled_agent_moves_its_routers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = start_env(tmp_path, monkeypatch, routers=16, ha_routers=4, busy=0, ha_takeover_time=0.3)
    try:
        source = env.agent_id("net-1")
        env.cloud.set_admin_state(source, False)  # alive, but its routers are torn down
        before = env.cloud.read_snapshot()
        plan = evacuation_plan(env, "net-1")
        assert plan.canary > 0  # the re-check after the canary must not stop the rest
        executor, _ = env.executor()
        result = executor.run(plan)
        assert result.ok, result.summary()
        assert result.counts()["skipped"] == 0
        assert {r.outcome for r in result.results} == {MoveOutcome.MOVED}
        assert_emptied(env, source, before)
    finally:
        env.emu.stop()


def test_evacuate_force_moves_the_routers_of_a_live_enabled_agent(env: Env) -> None:
    source = env.agent_id("net-1")
    before = env.cloud.read_snapshot()
    plan = evacuation_plan(env, "net-1")
    executor, _ = env.executor()
    gated = executor.run(plan)  # without --force the live source keeps every router
    assert {r.outcome for r in gated.results} == {MoveOutcome.SKIPPED}
    assert all("alive again" in r.reason for r in gated.results)
    assert routers_on(env.cloud.read_snapshot(), source) == routers_on(before, source)
    forced = executor.run(plan, require_dead_source=False)  # what `evacuate --force` passes
    assert forced.ok, forced.summary()
    assert forced.counts()["moved"] == len(plan.moves)
    assert_emptied(env, source, before)


def test_ha_replicas_are_kept_once_the_source_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = start_env(tmp_path, monkeypatch, routers=6, ha_routers=6, busy=0, ha_takeover_time=0.3)
    try:
        source = env.kill("net-1")
        snapshot = env.cloud.read_snapshot()
        moves = replica_replacements(snapshot, source, "evacuate")
        assert len(moves) >= 4

        def revive() -> None:  # right after the first new replica is bound
            env.emu.faults.revive_agent("net-1")
            wait_until(lambda: env.cloud.get_agent(source).alive, what="net-1 alive")

        cloud = TriggerCloud(env.cloud, "bind", revive)
        executor, _ = env.executor(cloud=cloud, concurrency=1)  # type: ignore[arg-type]
        result = executor.run(Plan("evacuate", tuple(moves)))
        first_add, first_remove, *rest = result.results
        assert first_add.outcome is MoveOutcome.MOVED
        assert first_remove.outcome is MoveOutcome.SKIPPED
        assert "kept next to" in first_remove.reason
        assert {r.outcome for r in rest} == {MoveOutcome.SKIPPED}
        assert all("alive again" in r.reason for r in result.results[1:])
        assert result.ok
        after = env.cloud.read_snapshot()
        for router_id in {m.router_id for m in moves}:
            hosts = {b.agent_id for b in after.bindings_of_router(router_id)}
            was = {b.agent_id for b in snapshot.bindings_of_router(router_id)}
            expected = was | {moves[0].target or ""} if router_id == moves[0].router_id else was
            assert hosts == expected, router_id
    finally:
        env.emu.stop()


def test_a_move_cut_by_an_api_outage_is_put_back_on_an_agent(env: Env) -> None:
    source = env.kill("net-1")
    plan = env.evacuation("net-1")
    # longer than the adapter's retries of one call (pauses 0.1 + 0.2 + 0.4 + 0.8 s)
    cloud = TriggerCloud(env.cloud, "unbind", lambda: env.emu.faults.api_outage(2.5))
    executor, _ = env.executor(
        cloud=cloud,  # type: ignore[arg-type]
        concurrency=1,
        backoff=0.02,
        backoff_max=0.1,
        salvage_patience=10.0,
    )
    result = executor.run(plan)
    assert result.ok, result.summary()
    first = result.results[0]
    assert first.outcome is MoveOutcome.MOVED and "re-bound after" in first.reason
    assert result.counts()["moved"] == len(plan.moves)
    assert_hosted_and_active(env, [m.router_id for m in plan.moves], {source})


def test_a_router_neutron_auto_schedules_in_the_gap_is_reported_where_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """net-4 revives right after the first unbind: its full resync auto-schedules the
    unhosted router to itself (router_auto_schedule), l3ha's bind answers 409."""
    env = start_env(tmp_path, monkeypatch, routers=12, busy=0)
    try:
        source, spare = env.kill("net-1"), env.kill("net-4")
        plan = env.evacuation("net-1", targets=[env.agent_id("net-2")])
        cloud = TriggerCloud(env.cloud, "unbind", lambda: env.emu.faults.revive_agent("net-4"))
        executor, _ = env.executor(cloud)  # type: ignore[arg-type]
        result = executor.run(plan)
        assert result.ok and {r.outcome for r in result.results} == {MoveOutcome.MOVED}
        grabbed = [r for r in result.results if r.target == spare]
        assert grabbed and all("Neutron scheduled it to net-4" in r.reason for r in grabbed)
        # moves unbound at the same moment were all in the gap: net-4 took each of them
        assert {r.target for r in result.results} <= {spare, env.agent_id("net-2")}
        assert_hosted_and_active(env, [m.router_id for m in plan.moves], {source})
    finally:
        env.emu.stop()
