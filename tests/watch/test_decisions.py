"""The daemon's pure parts: what it decides from its own verdicts, the move budget, and
plans cut to a budget."""

from __future__ import annotations

from l3ha.daemon.budget import MoveBudget
from l3ha.daemon.decide import decide, overlay, targets
from l3ha.health import Verdict
from l3ha.model import Agent, Binding, Move, MoveKind, Plan, Router, Snapshot
from l3ha.operations import Action
from l3ha.operations.planning import within_budget


def _world(unhosted: int = 0, ha_on: str | None = None) -> Snapshot:
    agents = tuple(Agent(id=a, host=f"net-{a}") for a in "abcd")
    routers = [Router(id=f"r{i}") for i in range(8)] + [Router(id="h1", ha=True)]
    routers += [Router(id=f"u{i}") for i in range(unhosted)]
    bindings = [Binding(f"r{i}", "abcd"[i % 4]) for i in range(8)]
    bindings += [Binding("h1", ha_on or "c"), Binding("h1", "d")]
    return Snapshot(agents, tuple(routers), tuple(bindings))


ALL_ALIVE = dict.fromkeys("abcd", Verdict.ALIVE)


def test_nothing_to_do_when_every_agent_is_alive_and_every_router_hosted() -> None:
    assert decide(_world(), ALL_ALIVE, auto_rebalance=False) == []


def test_only_dead_agents_are_evacuated_never_suspect_grace_or_partitioned() -> None:
    verdicts = {
        "a": Verdict.DEAD,
        "b": Verdict.SUSPECT,
        "c": Verdict.PARTITIONED,
        "d": Verdict.GRACE,
    }
    decisions = decide(_world(), verdicts, auto_rebalance=True)
    assert [(d.action, d.agent) for d in decisions] == [(Action.EVACUATE, "a")]


def test_unhosted_routers_and_ha_replicas_on_dead_agents_ask_for_a_repair() -> None:
    (repair,) = decide(_world(unhosted=2), ALL_ALIVE, auto_rebalance=False)
    assert repair.action is Action.REPAIR and "2 router(s) have no agent" in repair.reason
    verdicts = {**ALL_ALIVE, "b": Verdict.DEAD}
    actions = [d.action for d in decide(_world(ha_on="b"), verdicts, auto_rebalance=False)]
    assert actions == [Action.EVACUATE, Action.REPAIR]


def test_rebalance_only_with_auto_rebalance_and_a_settled_fleet() -> None:
    assert [d.action for d in decide(_world(), ALL_ALIVE, True)] == [Action.REBALANCE]
    unsettled = {**ALL_ALIVE, "c": Verdict.SUSPECT}
    assert decide(_world(), unsettled, True) == []


def test_overlay_marks_only_dead_agents_dead_and_targets_only_alive_ones() -> None:
    verdicts = {"a": Verdict.DEAD, "b": Verdict.SUSPECT, "c": Verdict.ALIVE, "d": Verdict.GRACE}
    world = overlay(_world(), verdicts)
    assert {a.id: a.alive for a in world.agents} == {"a": False, "b": True, "c": True, "d": True}
    assert targets(verdicts) == ("c",)


def test_budget_refills_at_the_rate_capped_by_the_cycle_and_slows_under_disruption() -> None:
    budget = MoveBudget(per_minute=60, disrupted_per_minute=6, per_cycle=10, now=0.0)
    assert budget.available(0.0, disrupted_agents=1) == 10
    budget.spend(10, 0.0)
    assert budget.available(0.0, 1) == 0
    assert budget.available(5.0, 1) == 5  # one per second
    assert budget.available(100.0, 1) == 10  # never more than one cycle's cap
    budget.spend(10, 100.0)
    budget.available(100.0, disrupted_agents=2)  # several agents disrupted: the lower rate
    assert budget.available(110.0, 2) == 1
    assert budget.rate() == 6


def _ha_plan() -> Plan:
    moves = (
        Move("r1", MoveKind.MOVE, "b", "a"),
        Move("h1", MoveKind.ADD_REPLICA, "c", "a"),
        Move("h1", MoveKind.REMOVE_REPLICA, None, "a"),
        Move("r2", MoveKind.MOVE, "b", "a"),
    )
    return Plan("evacuate", moves, canary=3)


def test_a_budget_keeps_whole_routers_and_says_what_waits() -> None:
    plan = _ha_plan()
    assert within_budget(plan, None) is plan and within_budget(plan, 4) is plan
    cut = within_budget(plan, 2)  # the HA pair does not fit after r1: stop there
    assert [m.router_id for m in cut.moves] == ["r1"]
    assert cut.canary == 1 and "3 move(s) left for later" in cut.warnings[-1]
    assert [m.router_id for m in within_budget(plan, 3).moves] == ["r1", "h1", "h1"]


def test_fallback_targets_stay_within_the_allowed_agents() -> None:
    from l3ha.executor import snapshot_candidates

    move = Move("r0", MoveKind.MOVE, "b", "a")
    assert list(snapshot_candidates(_world())(move)) == ["b", "c", "d"]
    assert list(snapshot_candidates(_world(), allowed={"c"})(move)) == ["c"]


def test_a_cycle_budget_counts_the_moves_that_wrote_for_either_kind() -> None:
    from l3ha.dhcp_model import DhcpMove, DhcpMoveKind, DhcpPlan, DhcpSnapshot
    from l3ha.executor.dhcp import DhcpMoveResult, DhcpOutcome, DhcpRunResult
    from l3ha.executor.outcome import MoveOutcome, MoveResult, RunResult
    from l3ha.operations.dhcp import DhcpExecuted, DhcpResult
    from l3ha.operations.request import ActionResult, DhcpAction, Executed

    move = Move("r1", MoveKind.MOVE, "b", "a")
    routers = RunResult("evacuate", tuple(MoveResult(move, o) for o in MoveOutcome), operation_id=1)
    snapshot = _world()
    result = ActionResult(Action.EVACUATE, (Executed(Plan("evacuate"), snapshot, routers),))
    # moved, pending, failed, unhosted, rolled back: each began to write
    assert result.moves_started == len(MoveOutcome) - 2
    dmove = DhcpMove("n1", DhcpMoveKind.MOVE, "b", "a")
    nets = DhcpRunResult("dhcp-evacuate", tuple(DhcpMoveResult(dmove, o) for o in DhcpOutcome))
    world = DhcpSnapshot((), (), ())
    dhcp = DhcpResult(DhcpAction.EVACUATE, (DhcpExecuted(DhcpPlan("x"), world, nets),))
    assert dhcp.moves_started == len(DhcpOutcome) - 2
