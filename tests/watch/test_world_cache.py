"""The daemon's world cache: a quiet cycle reads only the agents; bindings are read again
only for agents whose verdict changed or that an operation touched."""

from __future__ import annotations

from tests.executor.memcloud_executor import MemCloud

from l3ha.daemon.world import WorldCache


class CountingCloud(MemCloud):
    """A MemCloud that counts the reads the cache makes."""

    def __init__(self) -> None:
        base = MemCloud.build({"a": {}, "b": {}, "c": {}}, {"r1": ["a"], "r2": ["b"], "r3": ["c"]})
        super().__init__(base.agents, base.routers, base.bindings)
        self.reads: list[str] = []

    def read_snapshot(self, with_ha_state: bool = False):  # type: ignore[no-untyped-def]
        self.reads.append("snapshot")
        return super().read_snapshot(with_ha_state)

    def routers_on_agent(self, agent_id: str):  # type: ignore[no-untyped-def]
        self.reads.append(f"agent:{agent_id}")
        return super().routers_on_agent(agent_id)


def test_full_read_first_then_only_changed_agents_then_a_periodic_full_read() -> None:
    cloud = CountingCloud()
    cache = WorldCache(cloud, full_resync=3)
    agents = cloud.list_agents()
    cache.refresh(agents, changed=set())
    assert cloud.reads == ["snapshot"]
    cloud.bindings["r1"] = ["b"]  # moved behind the cache's back
    quiet = cache.refresh(agents, changed=set())
    assert cloud.reads == ["snapshot"]  # a quiet cycle reads no binding
    assert {b.agent_id for b in quiet.bindings_of_router("r1")} == {"a"}
    fresh = cache.refresh(agents, changed={"a", "b"})
    assert cloud.reads == ["snapshot", "agent:a", "agent:b"]
    assert {b.agent_id for b in fresh.bindings_of_router("r1")} == {"b"}
    cache.refresh(agents, changed=set())  # the third cycle since the full read
    assert cloud.reads[-1] == "snapshot"


def test_touched_agents_are_read_again_and_a_forced_full_read_happens() -> None:
    cloud = CountingCloud()
    cache = WorldCache(cloud, full_resync=100)
    agents = cloud.list_agents()
    cache.refresh(agents, changed=set())
    cloud.bindings["r3"] = ["a"]
    cache.reread({"a", "c"})
    assert cloud.reads[-2:] == ["agent:a", "agent:c"]
    assert cache.snapshot is not None
    assert {b.agent_id for b in cache.snapshot.bindings_of_router("r3")} == {"a"}
    cache.force_full = True
    cache.refresh(agents, changed=set())
    assert cloud.reads[-1] == "snapshot"
