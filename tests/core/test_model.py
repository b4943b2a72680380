"""Snapshot indexes and agent/router resolution by operators' references."""

from __future__ import annotations

import pytest

from l3ha.errors import AmbiguousError, NotFoundError
from l3ha.model import Agent, AgentMode, Binding, Router, Snapshot


def _snapshot() -> Snapshot:
    agents = (
        Agent(id="aaaa1111-0000", host="net-1"),
        Agent(id="aaaa2222-0000", host="net-2"),
        Agent(id="bbbb3333-0000", host="net-3", mode=AgentMode.DVR_SNAT),
        Agent(id="cccc4444-0000", host="net-3", mode=AgentMode.DVR),
    )
    routers = (Router(id="r1", name="web"), Router(id="r2", name="db"), Router(id="r3", name="db"))
    bindings = (Binding("r1", "aaaa1111-0000"), Binding("r2", "aaaa1111-0000"))
    return Snapshot(agents=agents, routers=routers, bindings=bindings)


def test_agent_found_by_id_host_and_unique_prefix() -> None:
    snap = _snapshot()
    assert snap.find_agent("aaaa2222-0000").host == "net-2"
    assert snap.find_agent("net-1").id == "aaaa1111-0000"
    assert snap.find_agent("bbbb").host == "net-3"


def test_host_with_two_agents_is_ambiguous_and_lists_them() -> None:
    with pytest.raises(AmbiguousError) as err:
        _snapshot().find_agent("net-3")
    assert "bbbb3333-0000" in str(err.value)
    assert "cccc4444-0000" in str(err.value)
    assert err.value.exit_code == 2


def test_ambiguous_id_prefix_lists_candidates() -> None:
    with pytest.raises(AmbiguousError) as err:
        _snapshot().find_agent("aaaa")
    assert "aaaa1111-0000, aaaa2222-0000" in str(err.value)


def test_unknown_agent_suggests_similar_hosts() -> None:
    with pytest.raises(NotFoundError) as err:
        _snapshot().find_agent("net")
    message = str(err.value)
    assert "no L3 agent" in message
    assert "net-1" in message
    assert "\n" not in message


def test_bindings_are_indexed_both_ways_and_unhosted_found() -> None:
    snap = _snapshot()
    assert [b.router_id for b in snap.bindings_of_agent("aaaa1111-0000")] == ["r1", "r2"]
    assert snap.bindings_of_router("r3") == ()
    assert [r.id for r in snap.unhosted_routers()] == ["r3"]


def test_router_by_id_or_unique_name() -> None:
    snap = _snapshot()
    assert snap.find_router("web").id == "r1"
    assert snap.find_router("r2").name == "db"
    with pytest.raises(AmbiguousError):
        snap.find_router("db")
    with pytest.raises(NotFoundError):
        snap.find_router("nope")
