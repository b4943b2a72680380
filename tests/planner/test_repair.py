"""Repair: bind unhosted routers, replace HA replicas on dead or disabled agents."""

from __future__ import annotations

from l3ha.model import AgentMode, HAState, MoveKind
from l3ha.planner import apply_plan, plan_repair

from .helpers import POLICY, WEIGHTS, agent, many, router, snapshot


def test_unhosted_routers_are_bound_load_aware() -> None:
    agents = [agent("a"), agent("b"), agent("dead", alive=False)]
    loose = many("loose", 4)
    snap = snapshot(agents, [*loose, *many("f", 2)], {"f-000": "a", "f-001": "a"})
    plan = plan_repair(snap, POLICY, WEIGHTS)
    assert all(m.kind == MoveKind.BIND for m in plan.moves)
    assert [m.target for m in plan.moves] == ["b", "b", "a", "b"]
    assert apply_plan(snap, plan).unhosted_routers() == ()


def test_ha_replica_on_dead_agent_replaced_in_another_az() -> None:
    agents = [
        agent("dead", az="z1", alive=False),
        agent("live", az="z2"),
        agent("z2b", az="z2"),
        agent("z3", az="z3"),
    ]
    filler = many("f", 3)
    snap = snapshot(
        agents,
        [router("ha", ha=True), *filler],
        {"ha": ["dead", "live"], **{f.id: "z3" for f in filler}},
        active={"ha": "live"},
    )
    plan = plan_repair(snap, POLICY, WEIGHTS)
    assert [(m.kind, m.target, m.source) for m in plan.moves] == [
        (MoveKind.ADD_REPLICA, "z3", "dead"),
        (MoveKind.REMOVE_REPLICA, None, "dead"),
    ]
    after = apply_plan(snap, plan)
    states = {b.agent_id: b.ha_state for b in after.bindings_of_router("ha")}
    assert states == {"live": HAState.ACTIVE, "z3": HAState.STANDBY}


def test_disabled_agent_replica_is_replaced_and_active_never_touched() -> None:
    agents = [agent("off", up=False), agent("x"), agent("y")]
    snap = snapshot(agents, [router("ha", ha=True)], {"ha": ["off", "x"]}, active={"ha": "x"})
    plan = plan_repair(snap, POLICY, WEIGHTS)
    assert [m.kind for m in plan.moves] == [MoveKind.ADD_REPLICA, MoveKind.REMOVE_REPLICA]
    assert plan.moves[0].target == "y"
    assert all("x" not in (m.source, m.target) for m in plan.moves)


def test_no_spare_agent_keeps_the_dead_replica_and_says_why() -> None:
    agents = [agent("dead", alive=False), agent("x")]
    snap = snapshot(agents, [router("ha", ha=True)], {"ha": ["dead", "x"]}, active={"ha": "x"})
    plan = plan_repair(snap, POLICY, WEIGHTS)
    assert plan.moves == ()
    assert plan.unplaceable[0].router_id == "ha"


def test_legacy_router_on_dead_agent_is_left_to_evacuate_with_warning() -> None:
    agents = [agent("dead", alive=False), agent("x")]
    snap = snapshot(agents, [router("r")], {"r": "dead"})
    plan = plan_repair(snap, POLICY, WEIGHTS)
    assert plan.moves == ()
    assert any("evacuate host-dead" in w for w in plan.warnings)


def test_dvr_router_unhosted_goes_to_dvr_snat() -> None:
    agents = [agent("leg"), agent("snat", mode=AgentMode.DVR_SNAT), agent("c", mode=AgentMode.DVR)]
    snap = snapshot(agents, [router("d", dvr=True)], {})
    plan = plan_repair(snap, POLICY, WEIGHTS)
    assert [(m.kind, m.target) for m in plan.moves] == [(MoveKind.BIND, "snat")]


def test_repair_of_a_healthy_world_is_empty() -> None:
    agents = [agent("a"), agent("b")]
    snap = snapshot(agents, [router("ha", ha=True), router("r")], {"ha": ["a", "b"], "r": "a"})
    plan = plan_repair(snap, POLICY, WEIGHTS)
    assert plan.moves == () and plan.unplaceable == () and plan.warnings == ()


def test_active_replica_on_a_live_disabled_agent_is_never_moved() -> None:
    from l3ha.model import Agent, Binding, HAState, Router, Snapshot
    from l3ha.planner import PlacementPolicy, plan_repair
    from l3ha.weights import WeightPolicy

    agents = (
        Agent(id="a1", host="net-1", availability_zone="az1"),
        Agent(id="a2", host="net-2", availability_zone="az2"),
        Agent(id="off", host="net-3", availability_zone="az1", admin_state_up=False),
    )
    router = Router(id="r", ha=True)
    active_on_disabled = Snapshot(
        agents,
        (router,),
        (Binding("r", "off", HAState.ACTIVE), Binding("r", "a1", HAState.STANDBY)),
    )
    plan = plan_repair(active_on_disabled, PlacementPolicy(), WeightPolicy())
    assert plan.moves == ()
    assert any("active on unhealthy agent net-3" in w for w in plan.warnings)

    standby_on_disabled = Snapshot(
        agents,
        (router,),
        (Binding("r", "off", HAState.STANDBY), Binding("r", "a1", HAState.ACTIVE)),
    )
    plan = plan_repair(standby_on_disabled, PlacementPolicy(), WeightPolicy())
    assert [(m.kind.value, m.target, m.source) for m in plan.moves] == [
        ("add_replica", "a2", "off"),
        ("remove_replica", None, "off"),
    ]
