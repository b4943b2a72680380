"""Neutron scheduling a router itself while l3ha moves it, at exact points, in memory.

Neutron's ``router_auto_schedule`` binds every unhosted router to an agent that does a
full resync (a revived agent, one back from a partition, one just enabled), and a router
update schedules an unhosted router too. Both can land in the gap between l3ha's unbind
and bind; l3ha's bind then answers 409 (non-HA router hosted elsewhere). The hooks below
do what Neutron does at that instant: they write the binding straight into the cloud,
without going through l3ha's writes. The end-to-end case on the emulator is in
test_emulator_sources.py.
"""

from __future__ import annotations

from pathlib import Path

from tests.executor.memcloud_executor import DEAD, MemCloud, run

from l3ha.journal import MoveStep
from l3ha.model import Move, MoveKind, Plan


def grab_after_unbind(holder: str, then: dict[str, object] | None = None):  # type: ignore[no-untyped-def]
    """A hook: right after l3ha's first unbind, Neutron binds the router to ``holder``."""
    fired: list[bool] = []

    def hook(cloud: MemCloud, op: str, router: str, agent: str) -> None:
        if op == "unbind" and not fired:
            fired.append(True)
            cloud.bindings[router] = [holder]
            if then:
                cloud.set_agent(holder, **then)

    return hook


def one_move(target: str = "b", source: str = "a", kind: MoveKind = MoveKind.MOVE) -> Plan:
    return Plan("evacuate", (Move("r0", kind, target=target, source=source, reason="test"),))


def cloud4() -> MemCloud:
    return MemCloud.build({"a": DEAD, "b": {}, "c": {}, "d": {}}, {"r0": ["a"]})


def test_a_router_neutron_put_on_a_live_agent_in_the_gap_is_reported_moved_there(
    tmp_path: Path,
) -> None:
    cloud = cloud4()
    cloud.hooks.append(grab_after_unbind("d"))
    result, journal, _ = run(cloud, one_move(), tmp_path)
    (moved,) = result.results
    assert result.ok and moved.outcome == "moved" and moved.target == "d"
    assert "Neutron scheduled it to host-d" in moved.reason and "409" not in moved.reason
    assert cloud.hosts_of("r0") == ["d"]
    assert cloud.writes == [("unbind", "r0", "a")]  # the refused bind wrote nothing; no fight
    (record,) = journal.moves(result.operation_id or 0)
    assert record.target == "d"  # the journal says where it is, not where l3ha aimed
    steps = [(step, detail) for step, _, detail in journal.events(record.id)]
    assert (MoveStep.VERIFIED.value, moved.reason) in steps


def test_a_router_neutron_put_on_an_unusable_agent_is_moved_on_to_the_target(
    tmp_path: Path,
) -> None:
    cloud = cloud4()
    cloud.hooks.append(grab_after_unbind("c", then={"alive": False}))
    result, _, _ = run(cloud, one_move(), tmp_path)
    (moved,) = result.results
    assert result.ok and moved.outcome == "moved" and moved.target == "b"
    assert "Neutron scheduled it to c" in moved.reason and "host-c is dead" in moved.reason
    assert cloud.hosts_of("r0") == ["b"]
    assert cloud.writes == [("unbind", "r0", "a"), ("unbind", "r0", "c"), ("bind", "r0", "b")]


def test_grabbed_twice_onto_unusable_agents_is_not_fought_again(tmp_path: Path) -> None:
    cloud = cloud4()
    cloud.hooks.append(grab_after_unbind("c", then={"admin_state_up": False}))
    second: list[bool] = []

    def grab_again(c: MemCloud, op: str, router: str, agent: str) -> None:
        if op == "unbind" and agent == "c" and not second:
            second.append(True)
            c.bindings[router] = ["d"]
            c.set_agent("d", alive=False)

    cloud.hooks.append(grab_again)
    result, _, _ = run(cloud, one_move(), tmp_path)
    (failed,) = result.results
    assert failed.outcome == "failed" and failed.target == "d"
    assert "Neutron scheduled it to d" in failed.reason and "host-d is dead" in failed.reason
    assert cloud.hosts_of("r0") == ["d"]  # hosted (on what Neutron chose), reported as is
    assert [w for w in cloud.writes if w[0] == "unbind"] == [
        ("unbind", "r0", "a"),
        ("unbind", "r0", "c"),
    ]


def test_a_revived_source_taking_its_router_back_in_the_gap_keeps_it(tmp_path: Path) -> None:
    cloud = cloud4()
    cloud.hooks.append(grab_after_unbind("a", then={"alive": True}))
    result, _, _ = run(cloud, one_move(), tmp_path)
    (skipped,) = result.results
    assert skipped.outcome == "skipped" and skipped.target == "a"
    assert "back to its source host-a" in skipped.reason
    assert cloud.hosts_of("r0") == ["a"] and cloud.writes == [("unbind", "r0", "a")]


def test_an_unhosted_router_neutron_schedules_before_the_repair_bind_is_moved(
    tmp_path: Path,
) -> None:
    cloud = MemCloud.build({"a": DEAD, "b": {}, "c": {}}, {"r0": []})
    original = cloud.list_agents
    calls: list[int] = []

    def list_agents():  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 1:  # right after l3ha checked the target, before its bind
            cloud.bindings["r0"] = ["c"]
        return original()

    cloud.list_agents = list_agents  # type: ignore[method-assign]
    plan = Plan("repair", (Move("r0", MoveKind.BIND, target="b", source=None, reason="unhosted"),))
    result, _, _ = run(cloud, plan, tmp_path)
    (moved,) = result.results
    assert result.ok and moved.outcome == "moved" and moved.target == "c"
    assert "Neutron scheduled it to host-c" in moved.reason
    assert cloud.hosts_of("r0") == ["c"] and cloud.writes == []


def test_a_replica_neutron_re_adds_on_its_revived_agent_is_kept_not_fought(
    tmp_path: Path,
) -> None:
    """The dead replica's agent comes back right as l3ha removes it; its full resync tops
    the HA router up again onto itself. l3ha reports that and does not remove it again."""
    cloud = MemCloud.build({"a": DEAD, "b": {}, "c": {}}, {"r0": ["a", "b"]}, ha={"r0"})
    fired: list[bool] = []

    def resync(c: MemCloud, op: str, router: str, agent: str) -> None:
        if op == "unbind" and agent == "a" and not fired:
            fired.append(True)
            c.set_agent("a", alive=True)
            c.bindings[router].append("a")

    cloud.hooks.append(resync)
    plan = Plan(
        "ha-repair",
        (
            Move("r0", MoveKind.ADD_REPLICA, target="c", source="a", reason="replace"),
            Move("r0", MoveKind.REMOVE_REPLICA, target=None, source="a", reason="replace"),
        ),
    )
    result, _, _ = run(cloud, plan, tmp_path, require_dead_source=False)
    added, removed = result.results
    assert added.outcome == "moved" and added.target == "c"
    assert (
        removed.outcome == "skipped" and "Neutron re-added the replica on host-a" in removed.reason
    )
    assert sorted(cloud.hosts_of("r0")) == ["a", "b", "c"]
    assert [w for w in cloud.writes if w[0] == "unbind"] == [("unbind", "r0", "a")]
