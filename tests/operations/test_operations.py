"""The operations layer called directly (as the daemon and rolling maintenance call it),
against the emulator: every write through the executor, journalled, dry run writes nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from tests.executor.emulator_env import Env, start_env

from l3ha.clock import SystemClock
from l3ha.errors import SafetyHaltError
from l3ha.executor import AgentChangeOutcome, ExecutorOptions
from l3ha.journal import Journal
from l3ha.operations import (
    DRAIN_MARK,
    Action,
    ActionRequest,
    AgentChanged,
    Executed,
    OperationContext,
    PlacementRequest,
    run_action,
)

FAST_RUN = ExecutorOptions(port_poll_interval=0.05, port_timeout=20.0)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    started = start_env(tmp_path, monkeypatch, agents=4, routers=16, ha_routers=2)
    yield started  # type: ignore[misc]
    started.emu.stop()


def _context(env: Env, journal: Journal | None, notices: list[str]) -> OperationContext:
    return OperationContext(env.cloud, journal, SystemClock(), notices.append)


def _agent_changes(state_dir: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(state_dir / "journal.sqlite") as db:
        rows = db.execute(
            "SELECT kind, args, status FROM operations WHERE kind='agent-state' ORDER BY id"
        ).fetchall()
    return [(str(k), str(a), str(s)) for k, a, s in rows]


def test_drain_then_undrain_write_the_agent_through_the_executor(env: Env) -> None:
    notices: list[str] = []
    state = env.tmp_path / "state"
    with Journal(state) as journal:
        ctx = _context(env, journal, notices)
        drained = run_action(ctx, ActionRequest(Action.DRAIN, execution=FAST_RUN, agent="net-2"))
        assert drained.exit_code == 0, (drained, notices)
        agent = env.cloud.get_agent(env.agent_id("net-2"))
        assert not agent.admin_state_up
        assert agent.description.startswith(DRAIN_MARK)
        assert env.cloud.routers_on_agent(agent.id) == []
        change = next(s for s in drained.steps if isinstance(s, AgentChanged))
        assert change.result.outcome is AgentChangeOutcome.DONE
        assert change.result.operation_id is not None

        undrained = run_action(
            ctx, ActionRequest(Action.UNDRAIN, execution=FAST_RUN, agent="net-2")
        )
        assert undrained.exit_code == 0
    agent = env.cloud.get_agent(env.agent_id("net-2"))
    assert agent.admin_state_up and agent.description == ""
    changes = _agent_changes(state)
    assert [status for _, _, status in changes] == ["done", "done"]
    assert '"admin_state_up": false' in changes[0][1] and "drain" in changes[0][1]
    assert '"admin_state_up": true' in changes[1][1]
    assert "agent net-2 disabled" in notices and "agent net-2 enabled" in notices


def test_dry_run_is_an_executor_mode_that_writes_nothing(env: Env) -> None:
    before = env.cloud.read_snapshot()
    notices: list[str] = []
    ctx = _context(env, None, notices)  # a dry run needs no journal
    dry = ExecutorOptions(dry_run=True)
    result = run_action(ctx, ActionRequest(Action.DRAIN, execution=dry, agent="net-1"))
    executed = [s for s in result.steps if isinstance(s, Executed)]
    assert executed and executed[0].run.dry_run
    assert {r.outcome.value for r in executed[0].run.results} == {"planned"}
    planned = [s for s in result.steps if isinstance(s, AgentChanged)]
    assert [p.result.outcome for p in planned] == [AgentChangeOutcome.PLANNED]
    after = env.cloud.read_snapshot()
    assert after.bindings == before.bindings
    # what l3ha could write to an agent (its heartbeat goes on meanwhile)
    written = [(a.id, a.admin_state_up, a.description) for a in before.agents]
    assert [(a.id, a.admin_state_up, a.description) for a in after.agents] == written
    assert not (env.tmp_path / "state" / "journal.sqlite").exists()


def test_evacuate_is_gated_planned_executed_and_verified(env: Env) -> None:
    dead = env.kill("net-3")
    hosted = {b.router_id for b in env.cloud.routers_on_agent(dead)}
    with Journal(env.tmp_path / "state") as journal:
        ctx = _context(env, journal, [])
        result = run_action(ctx, ActionRequest(Action.EVACUATE, execution=FAST_RUN, agent="net-3"))
    assert result.exit_code == 0 and not result.problems
    (run,) = result.runs
    assert {r.router_id for r in run.results} >= hosted
    assert env.cloud.routers_on_agent(dead) == []


def test_evacuating_a_live_agent_is_refused_before_any_write(env: Env) -> None:
    before = env.cloud.read_snapshot().bindings
    ctx = _context(env, None, [])
    with pytest.raises(SafetyHaltError, match="alive and enabled"):
        run_action(ctx, ActionRequest(Action.EVACUATE, execution=FAST_RUN, agent="net-1"))
    assert env.cloud.read_snapshot().bindings == before


def test_drain_leaves_the_agent_enabled_when_a_router_could_not_leave(env: Env) -> None:
    # Only net-1 may take routers, and only one more: the rest cannot be placed.
    snapshot = env.cloud.read_snapshot()
    on_net1 = len(snapshot.bindings_of_agent(env.agent_id("net-1")))
    assert len(snapshot.bindings_of_agent(env.agent_id("net-2"))) > 1
    notices: list[str] = []
    request = ActionRequest(
        Action.DRAIN,
        execution=FAST_RUN,
        agent="net-2",
        placement=PlacementRequest(to=("net-1",), max_routers_per_agent=on_net1 + 1),
    )
    with Journal(env.tmp_path / "state") as journal:
        result = run_action(_context(env, journal, notices), request)
    assert result.exit_code == 1
    assert env.cloud.get_agent(env.agent_id("net-2")).admin_state_up
    assert any("left enabled" in n for n in notices), notices
    assert not [s for s in result.steps if isinstance(s, AgentChanged)]
    assert env.cloud.routers_on_agent(env.agent_id("net-2"))
