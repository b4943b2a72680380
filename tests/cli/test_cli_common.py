"""Shared command options: weights files, busy weight/threshold, command groups, row building."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from l3ha.cli.agents import agent_rows, heartbeat_age, parse_timestamp
from l3ha.cli.common import (
    add_cloud_options,
    add_snapshot_option,
    command_group,
    load_weight_policy,
    parse_weights,
)
from l3ha.cli.routers import router_rows, select_routers
from l3ha.errors import AmbiguousError, BadInputError, NotFoundError
from l3ha.model import Agent, Binding, HAState, Router, Snapshot
from l3ha.weights import WeightPolicy


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_cloud_options(parser)
    add_snapshot_option(parser)
    return parser.parse_args(list(argv))


def test_weights_json_and_yaml_give_the_same_overrides(tmp_path: Path) -> None:
    assert parse_weights('{"r1": 5, "r2": 1}', "w.json") == {"r1": 5, "r2": 1}
    assert parse_weights("r1: 5\nr2: 1\n", "w.yaml") == {"r1": 5, "r2": 1}
    assert parse_weights("", "empty.yaml") == {}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("- r1\n- r2\n", "expected a mapping"),
        ('{"r1": -3}', "positive integer"),
        ('{"r1": 0}', "positive integer"),
        ('{"r1": 2.5}', "positive integer"),
        ('{"r1": true}', "positive integer"),
        ("r1: [unclosed", "neither JSON nor YAML"),
    ],
)
def test_malformed_weights_are_one_line_bad_input(text: str, reason: str) -> None:
    with pytest.raises(BadInputError) as info:
        parse_weights(text, "w.txt")
    assert reason in str(info.value)
    assert "\n" not in str(info.value)


def test_weight_policy_from_options(tmp_path: Path) -> None:
    weights = tmp_path / "w.yaml"
    weights.write_text("r1: 40\n", encoding="utf-8")
    policy = load_weight_policy(_parse("--weights", str(weights), "--busy-weight", "5"))
    assert policy.overrides == {"r1": 40}
    assert policy.busy_weight == 5
    assert policy.busy_threshold == 5  # follows the busy weight unless given
    assert policy.is_busy(Router(id="rx", tags=("l3ha:busy",)))
    explicit = load_weight_policy(_parse("--busy-weight", "5", "--busy-threshold", "30"))
    assert not explicit.is_busy(Router(id="rx", tags=("l3ha:busy",)))
    assert explicit.is_busy(Router(id="r1", tags=("l3ha:weight=30",)))


def test_unreadable_weights_file_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="cannot read weights file"):
        load_weight_policy(_parse("--weights", str(tmp_path / "absent.json")))


def test_command_groups_are_shared_between_modules() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    first = command_group(sub, "agent", "agents")
    first.add_parser("list").set_defaults(which="list")
    second = command_group(sub, "agent", "agents")
    second.add_parser("drain").set_defaults(which="drain")
    assert parser.parse_args(["agent", "list"]).which == "list"
    assert parser.parse_args(["agent", "drain"]).which == "drain"


def _world() -> Snapshot:
    agents = (
        Agent(id="a1", host="net-1", heartbeat_timestamp="2026-01-01 00:00:00"),
        Agent(id="a2", host="net-2", heartbeat_timestamp=""),
        Agent(id="a3", host="net-3"),
    )
    routers = (
        Router(id="r1", name="b", tags=("l3ha:busy",)),
        Router(id="r2", name="a", ha=True),
        Router(id="r3", name="c", tags=("l3ha:weight=4",)),
        Router(id="r4", name="d"),
    )
    bindings = (
        Binding("r1", "a1"),
        Binding("r2", "a1", HAState.STANDBY),
        Binding("r2", "a2", HAState.ACTIVE),
        Binding("r3", "a2"),
    )
    return Snapshot(agents, routers, bindings, observed_at="2026-01-01T00:00:12.5+00:00")


def test_agent_rows_count_routers_busy_and_weight() -> None:
    rows = {r["host"]: r for r in agent_rows(_world(), WeightPolicy())}
    assert (rows["net-1"]["routers"], rows["net-1"]["busy"], rows["net-1"]["weight"]) == (2, 1, 11)
    assert (rows["net-2"]["routers"], rows["net-2"]["busy"], rows["net-2"]["weight"]) == (2, 0, 5)
    assert (rows["net-3"]["routers"], rows["net-3"]["weight"]) == (0, 0)
    assert rows["net-1"]["heartbeat_age"] == 12.5
    assert rows["net-2"]["heartbeat_age"] is None


def test_heartbeat_timestamps_of_both_shapes_parse_as_utc() -> None:
    naive = parse_timestamp("2026-01-01 00:00:00")
    iso = parse_timestamp("2026-01-01T00:00:00Z")
    assert naive == iso
    assert naive is not None and naive.utcoffset() is not None
    assert parse_timestamp("yesterday") is None
    assert heartbeat_age(Agent(id="a", host="h", heartbeat_timestamp="junk"), "2026") is None


def test_router_selection_by_agent_and_unhosted() -> None:
    world = _world()
    assert [r.id for r in select_routers(world, "net-2", False)] == ["r2", "r3"]
    assert [r.id for r in select_routers(world, "a1", False)] == ["r2", "r1"]
    assert [r.id for r in select_routers(world, None, True)] == ["r4"]
    with pytest.raises(NotFoundError, match="did you mean"):
        select_routers(world, "net", False)


def test_ambiguous_host_lists_candidates() -> None:
    world = Snapshot((Agent(id="x1", host="dup"), Agent(id="x2", host="dup")), (), ())
    with pytest.raises(AmbiguousError, match=r"x1.*x2"):
        select_routers(world, "dup", False)


def test_router_rows_show_agents_with_ha_state() -> None:
    world = _world()
    rows = {r["id"]: r for r in router_rows(world, list(world.routers), WeightPolicy())}
    assert rows["r2"]["agents"] == ["net-1(standby)", "net-2(active)"]
    assert rows["r1"]["agents"] == ["net-1"]
    assert (rows["r1"]["weight"], rows["r1"]["busy"]) == (10, True)
    assert (rows["r3"]["weight"], rows["r3"]["busy"]) == (4, False)
    assert rows["r4"]["agents"] == []


def test_router_rows_extra_columns() -> None:
    world = _world()
    rows = {r["id"]: r for r in router_rows(world, list(world.routers), WeightPolicy())}
    assert rows["r2"]["agent_ids"] == ["a1", "a2"]
    assert rows["r1"]["tags"] == ["l3ha:busy"]
