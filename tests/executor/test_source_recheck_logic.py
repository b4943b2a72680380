"""The source re-check at exact steps, against the in-memory cloud.

"Back" means alive AND enabled: a source that revives but stays disabled
(its routers torn down) keeps being emptied; once it is enabled too, the
remaining moves, replica additions and replica removals of that source are
skipped, and a replica already added is kept next to the old one. A
router's moves start in plan order even when a target's in-flight limit
holds the first one back.
"""

from __future__ import annotations

from pathlib import Path

from tests.executor.memcloud_executor import DEAD, MemCloud, evac_cloud, evac_plan, run

from l3ha.executor import MoveOutcome
from l3ha.model import Move, MoveKind, Plan


def bind_count(cloud: MemCloud) -> int:
    return sum(1 for op, _, _ in cloud.writes if op == "bind")


def test_a_live_but_disabled_source_is_evacuated_past_the_canary(tmp_path: Path) -> None:
    cloud = evac_cloud(6)
    cloud.set_agent("a", alive=True, admin_state_up=False)
    result, _, _ = run(cloud, evac_plan(6, canary=2), tmp_path)
    assert [r.outcome for r in result.results] == [MoveOutcome.MOVED] * 6
    assert all(cloud.hosts_of(f"r{i}") == ["bc"[i % 2]] for i in range(6))


def test_a_source_reviving_disabled_is_still_emptied_until_it_is_enabled(tmp_path: Path) -> None:
    cloud = evac_cloud(8)

    def revive_in_two_steps(c: MemCloud, op: str, router: str, agent: str) -> None:
        if op == "bind" and bind_count(c) == 2:
            c.set_agent("a", alive=True)  # alive, still disabled: not usable
        if op == "bind" and bind_count(c) == 4:
            c.set_agent("a", admin_state_up=True)  # now usable: stop

    cloud.set_agent("a", admin_state_up=False)
    cloud.hooks.append(revive_in_two_steps)
    result, _, _ = run(cloud, evac_plan(8), tmp_path, concurrency=1, wait_ports=False)
    outcomes = [r.outcome for r in result.results]
    assert outcomes == [MoveOutcome.MOVED] * 4 + [MoveOutcome.SKIPPED] * 4
    assert all("alive again and enabled" in r.reason for r in result.results[4:])
    assert all(cloud.hosts_of(f"r{i}") == ["a"] for i in range(4, 8))


def ha_cloud(source: dict[str, object]) -> MemCloud:
    return MemCloud.build(
        {"a": source, "b": {}, "c": {}},
        {f"h{i}": ["a", "b"] for i in range(3)},
        ha={"h0", "h1", "h2"},
    )


def replace_plan() -> Plan:
    moves: list[Move] = []
    for i in range(3):
        moves.append(Move(f"h{i}", MoveKind.ADD_REPLICA, target="c", source="a"))
        moves.append(Move(f"h{i}", MoveKind.REMOVE_REPLICA, target=None, source="a"))
    return Plan("evacuate", tuple(moves))


def test_replicas_stop_being_replaced_once_the_source_is_back(tmp_path: Path) -> None:
    cloud = ha_cloud(DEAD)

    def revive_after_first_add(c: MemCloud, op: str, router: str, agent: str) -> None:
        if op == "bind":
            c.set_agent("a", alive=True)

    cloud.hooks.append(revive_after_first_add)
    result, _, _ = run(cloud, replace_plan(), tmp_path, concurrency=1)
    outcomes = [r.outcome for r in result.results]
    assert outcomes == [MoveOutcome.MOVED] + [MoveOutcome.SKIPPED] * 5
    kept = result.results[1]
    assert "alive again and enabled" in kept.reason and "kept next to" in kept.reason
    assert all("alive again" in r.reason for r in result.results[2:])
    assert cloud.writes == [("bind", "h0", "c")]  # no replica removed, no other added
    assert sorted(cloud.hosts_of("h0")) == ["a", "b", "c"]  # both replicas kept
    assert all(sorted(cloud.hosts_of(f"h{i}")) == ["a", "b"] for i in (1, 2))
    assert result.ok


def test_a_replica_removal_rechecks_the_source_right_before_writing(tmp_path: Path) -> None:
    cloud = ha_cloud(DEAD)
    polls = {"n": 0}

    def revive_while_the_new_replica_comes_up(router_id: str) -> None:
        polls["n"] += 1
        if polls["n"] == 1:
            cloud.set_agent("a", alive=True)

    original = cloud.router_ports

    def router_ports(router_id: str):  # type: ignore[no-untyped-def]
        revive_while_the_new_replica_comes_up(router_id)
        return original(router_id)

    cloud.router_ports = router_ports  # type: ignore[method-assign]
    plan = Plan("evacuate", replace_plan().moves[:2])
    result, _, _ = run(cloud, plan, tmp_path)
    assert [r.outcome for r in result.results] == [MoveOutcome.MOVED, MoveOutcome.SKIPPED]
    assert "kept next to b, c" in result.results[1].reason
    assert sorted(cloud.hosts_of("h0")) == ["a", "b", "c"]


def test_replicas_of_a_live_but_disabled_source_are_replaced(tmp_path: Path) -> None:
    cloud = ha_cloud({"alive": True, "admin_state_up": False})
    result, _, _ = run(cloud, replace_plan(), tmp_path, concurrency=1)
    assert [r.outcome for r in result.results] == [MoveOutcome.MOVED] * 6
    assert all(sorted(cloud.hosts_of(f"h{i}")) == ["b", "c"] for i in range(3))


def test_force_empties_a_live_enabled_source_that_the_gate_keeps(tmp_path: Path) -> None:
    cloud = MemCloud.build({"a": {}, "b": {}, "c": {}}, {f"r{i}": ["a"] for i in range(4)})
    gated, _, _ = run(cloud, evac_plan(4), tmp_path / "gated")
    assert {r.outcome for r in gated.results} == {MoveOutcome.SKIPPED}
    assert cloud.writes == []
    forced, _, _ = run(cloud, evac_plan(4), tmp_path / "forced", require_dead_source=False)
    assert [r.outcome for r in forced.results] == [MoveOutcome.MOVED] * 4
    assert all(cloud.hosts_of(f"r{i}") == ["bc"[i % 2]] for i in range(4))


def test_a_replica_removal_waits_for_its_add_held_by_the_target_limit(tmp_path: Path) -> None:
    cloud = MemCloud.build({"a": DEAD, "b": {}, "c": {}}, {"r0": ["a"], "h1": ["a", "b"]}, {"h1"})
    cloud.polls_to_active = 3  # r0 holds c's only in-flight slot for a while
    plan = Plan(
        "evacuate",
        (
            Move("r0", MoveKind.MOVE, target="c", source="a"),
            Move("h1", MoveKind.ADD_REPLICA, target="c", source="a"),
            Move("h1", MoveKind.REMOVE_REPLICA, target=None, source="a"),
        ),
    )
    result, _, _ = run(cloud, plan, tmp_path, per_target_inflight=1)
    assert [r.outcome for r in result.results] == [MoveOutcome.MOVED] * 3
    assert cloud.writes[-2:] == [("bind", "h1", "c"), ("unbind", "h1", "a")]
    assert sorted(cloud.hosts_of("h1")) == ["b", "c"]
