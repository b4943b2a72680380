"""The pure DHCP planner: evacuate, drain, repair, placement and its invariants."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from l3ha.dhcp_model import (
    DhcpBinding,
    DhcpMoveKind,
    DhcpPort,
    DhcpSnapshot,
    Network,
    OtherAgent,
    usable,
)
from l3ha.errors import AmbiguousError, BadInputError, NotFoundError
from l3ha.model import Agent
from l3ha.planner.dhcp import (
    DhcpPolicy,
    apply_dhcp_plan,
    plan_dhcp_drain,
    plan_dhcp_evacuate,
    plan_dhcp_repair,
)


def agent(n: int, *, alive: bool = True, up: bool = True, az: str = "nova") -> Agent:
    return Agent(f"dhcp-{n}", f"net-{n}", availability_zone=az, alive=alive, admin_state_up=up)


def world(
    agents: list[Agent],
    hosting: dict[str, list[int]],
    hints: dict[str, tuple[str, ...]] | None = None,
) -> DhcpSnapshot:
    hints = hints or {}
    networks = tuple(Network(n, availability_zone_hints=hints.get(n, ())) for n in hosting)
    bindings = tuple(DhcpBinding(n, f"dhcp-{a}") for n, hosts in hosting.items() for a in hosts)
    by_id = {a.id: a for a in agents}
    ports = tuple(
        DhcpPort(f"p-{b.network_id}-{b.agent_id}", b.network_id, by_id[b.agent_id].host, "ACTIVE")
        for b in bindings
    )
    return DhcpSnapshot(tuple(agents), networks, bindings, ports)


def served(snapshot: DhcpSnapshot, network_id: str) -> int:
    return len(snapshot.serving_agents(network_id))


def test_evacuate_spreads_networks_by_load_and_leaves_nothing_on_the_source() -> None:
    agents = [agent(1, alive=False), agent(2), agent(3)]
    snap = world(agents, {f"n{i}": [1] for i in range(6)} | {"busy": [2], "busy2": [2]})
    plan = plan_dhcp_evacuate(snap, "dhcp-1", DhcpPolicy())
    targets = [m.target for m in plan.moves]
    assert all(m.kind is DhcpMoveKind.MOVE and m.source == "dhcp-1" for m in plan.moves)
    # agent 3 starts 2 networks lighter: it gets 4 of the 6, agent 2 gets 2 -> 4 and 4
    assert targets.count("dhcp-3") == 4 and targets.count("dhcp-2") == 2
    after = apply_dhcp_plan(snap, plan)
    assert after.networks_of_agent("dhcp-1") == ()
    assert all(served(after, n.id) == 1 for n in after.networks)


def test_evacuate_only_removes_a_copy_that_other_live_agents_make_redundant() -> None:
    snap = world([agent(1, alive=False), agent(2), agent(3)], {"a": [1, 2], "b": [1]})
    plan = plan_dhcp_evacuate(snap, "dhcp-1", DhcpPolicy())
    kinds = {m.network_id: m.kind for m in plan.moves}
    assert kinds == {"a": DhcpMoveKind.REMOVE, "b": DhcpMoveKind.MOVE}
    # the network nothing else serves goes first
    assert plan.moves[0].network_id == "b"


def test_evacuate_keeps_the_copy_count_and_different_agents() -> None:
    snap = world([agent(1, alive=False), agent(2), agent(3), agent(4)], {"a": [1, 2]})
    plan = plan_dhcp_evacuate(snap, "dhcp-1", DhcpPolicy(agents_per_network=2))
    assert [(m.kind, m.target) for m in plan.moves] == [(DhcpMoveKind.MOVE, "dhcp-3")]


def test_availability_zone_hints_and_spread_choose_the_target() -> None:
    agents = [agent(1, alive=False, az="az1"), agent(2, az="az1"), agent(3, az="az2")]
    snap = world(
        agents, {"hinted": [1], "free": [1], "filler": [3], "f2": [3]}, hints={"hinted": ("az2",)}
    )
    plan = plan_dhcp_evacuate(snap, "dhcp-1", DhcpPolicy())
    target = {m.network_id: m.target for m in plan.moves}
    assert target["hinted"] == "dhcp-3"  # the hint wins over agent 3's higher load
    assert target["free"] == "dhcp-2"


def test_to_restricts_targets_and_reports_what_cannot_be_placed() -> None:
    snap = world([agent(1, alive=False), agent(2), agent(3, alive=False)], {"a": [1], "b": [1]})
    plan = plan_dhcp_evacuate(snap, "dhcp-1", DhcpPolicy(allowed_targets=frozenset({"dhcp-3"})))
    assert plan.moves == ()
    assert {u.network_id for u in plan.unplaceable} == {"a", "b"}
    assert "--to" in plan.unplaceable[0].reason


def test_drain_moves_everything_off_a_live_agent() -> None:
    snap = world([agent(1), agent(2)], {"a": [1], "b": [1, 2]})
    plan = plan_dhcp_drain(snap, "dhcp-1", DhcpPolicy())
    assert plan.action == "dhcp-drain"
    assert apply_dhcp_plan(snap, plan).networks_of_agent("dhcp-1") == ()


def test_repair_replaces_dead_copies_adds_missing_ones_and_trims_only_when_asked() -> None:
    agents = [agent(1, alive=False), agent(2), agent(3), agent(4, up=False)]
    snap = world(agents, {"dead": [1], "short": [], "extra": [2, 3], "off": [4]})
    plan = plan_dhcp_repair(snap, DhcpPolicy())
    kinds = {m.network_id: m.kind for m in plan.moves}
    assert kinds == {"dead": DhcpMoveKind.MOVE, "short": DhcpMoveKind.ADD, "off": DhcpMoveKind.MOVE}
    trimmed = plan_dhcp_repair(snap, DhcpPolicy(trim=True))
    removals = [m for m in trimmed.moves if m.kind is DhcpMoveKind.REMOVE]
    assert [(m.network_id, m.source) for m in removals] == [("extra", "dhcp-3")] or [
        (m.network_id, m.source) for m in removals
    ] == [("extra", "dhcp-2")]
    after = apply_dhcp_plan(snap, trimmed)
    assert all(served(after, n.id) == 1 for n in after.networks)


def test_repair_skips_networks_without_dhcp() -> None:
    snap = DhcpSnapshot((agent(1),), (Network("nodhcp", needs_dhcp=False),), ())
    assert plan_dhcp_repair(snap, DhcpPolicy()).moves == ()


def test_policy_and_agent_references_refuse_bad_input() -> None:
    with pytest.raises(BadInputError, match="at least 1"):
        DhcpPolicy(agents_per_network=0)
    snap = DhcpSnapshot(
        (agent(1), Agent("dhcp-9", "net-1")),
        (),
        (),
        other_agents=(OtherAgent("l3-agent-1", "net-1", "L3 agent"),),
    )
    with pytest.raises(AmbiguousError, match="several DHCP agents"):
        snap.find_agent("net-1")
    with pytest.raises(NotFoundError, match=r"not a DHCP agent .*L3 agent on net-1"):
        snap.find_agent("l3-agent-1")
    with pytest.raises(NotFoundError, match="no DHCP agent with host or id 'nope'"):
        snap.find_agent("nope")
    assert snap.find_agent("dhcp-9").host == "net-1"


hosting_strategy = st.dictionaries(
    st.sampled_from([f"n{i}" for i in range(12)]),
    st.lists(st.integers(1, 5), max_size=3, unique=True),
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(
    hosting=hosting_strategy,
    dead=st.sets(st.integers(1, 5), max_size=3),
    copies=st.integers(1, 3),
    trim=st.booleans(),
)
def test_repair_is_idempotent_deterministic_and_never_loses_a_served_network(
    hosting: dict[str, list[int]], dead: set[int], copies: int, trim: bool
) -> None:
    agents = [agent(i, alive=i not in dead) for i in range(1, 6)]
    snap = world(agents, hosting)
    policy = DhcpPolicy(agents_per_network=copies, trim=trim)
    plan = plan_dhcp_repair(snap, policy)
    assert plan == plan_dhcp_repair(snap, policy)
    after = apply_dhcp_plan(snap, plan)
    assert plan_dhcp_repair(after, policy).moves == ()
    live = sum(1 for a in agents if usable(a))
    for network in snap.networks:
        assert served(after, network.id) >= min(served(snap, network.id), copies)
        assert served(after, network.id) >= min(copies, live)
        if trim:
            assert served(after, network.id) <= max(copies, 0)


@settings(max_examples=100, deadline=None)
@given(hosting=hosting_strategy, dead=st.sets(st.integers(2, 5), max_size=2))
def test_evacuate_empties_the_source_when_targets_exist(
    hosting: dict[str, list[int]], dead: set[int]
) -> None:
    agents = [agent(1, alive=False)] + [agent(i, alive=i not in dead) for i in range(2, 6)]
    snap = world(agents, hosting)
    plan = plan_dhcp_evacuate(snap, "dhcp-1", DhcpPolicy())
    after = apply_dhcp_plan(snap, plan)
    assert after.networks_of_agent("dhcp-1") == ()
    assert all(served(after, n) >= 1 for n in snap.networks_of_agent("dhcp-1"))
    assert plan_dhcp_evacuate(after, "dhcp-1", DhcpPolicy()).moves == ()


def test_evacuate_only_removes_a_network_without_dhcp_never_waits_for_its_port() -> None:
    # Neutron schedules networks without a DHCP-enabled subnet (external, HA) on DHCP
    # agents too; no agent ever gets a DHCP port for them, so moving one cannot finish.
    snap = DhcpSnapshot(
        (agent(1, alive=False), agent(2)),
        (Network("ext", needs_dhcp=False), Network("tenant")),
        (DhcpBinding("ext", "dhcp-1"), DhcpBinding("tenant", "dhcp-1")),
    )
    plan = plan_dhcp_evacuate(snap, "dhcp-1", DhcpPolicy())
    kinds = {m.network_id: (m.kind, m.serves_dhcp) for m in plan.moves}
    assert kinds == {"ext": (DhcpMoveKind.REMOVE, False), "tenant": (DhcpMoveKind.MOVE, True)}
    assert apply_dhcp_plan(snap, plan).networks_of_agent("dhcp-1") == ()
