"""The health gates beside single verdicts: availability-zone outages, clock jumps,
heartbeat parsing, the snapshot and API fleet gates, and the policy's own checks.

The zone and clock tests drive the simulated fleet of ``health_fleet``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime

import pytest
from tests.core.health_fleet import POLICY, D, Fleet, R, at, fleet, silence

from l3ha.clockjump import ClockSource, heartbeat_seconds
from l3ha.errors import BadInputError
from l3ha.health import (
    HealthPolicy,
    HealthState,
    Verdict,
    api_fleet_gate,
    dead_candidates,
    observe,
    snapshot_gate,
)
from l3ha.model import Agent, HaltReason

# --- availability zones --------------------------------------------------------------


def zoned(per_zone: int, zones: int = 3) -> Fleet:
    sim = fleet(per_zone * zones)
    sim.zones = {a: f"az{i % zones + 1}" for i, a in enumerate(sorted(sim.phases))}
    return sim


def test_outage_of_one_zone_of_three_halts_naming_it_and_lifts_after_recovery() -> None:
    sim = zoned(4)
    az2 = sorted(a for a, z in sim.zones.items() if z == "az2")
    sim.silences = {a: [(50.0, 400.0)] for a in az2}
    steps = sim.run(800)
    out = at(steps, 300.0)
    assert out.reasons == {HaltReason.AZ_OUTAGE}  # 4 of 12 is no fleet outage
    [halt] = out.halts
    assert halt.evidence["zone"] == "az2" and "availability zone az2" in halt.message
    assert halt.evidence["dead_agents"] == az2
    recovering = at(steps, 450.0)
    assert recovering.reasons == {HaltReason.RECOVERY_GRACE}
    assert recovering.halts[0].evidence["zone"] == "az2"
    assert at(steps, 560.0).halts == []


def test_one_dead_agent_in_a_zone_of_many_is_no_zone_outage() -> None:
    sim = zoned(4)
    sim.silences = silence(["n01"], 50.0)
    last = sim.run(400)[-1]
    assert dead_candidates(last.verdicts) == ["n01"] and last.halts == []


def test_every_zone_down_names_the_control_plane_first() -> None:
    sim = zoned(3)
    sim.silences = silence(sorted(sim.phases), 50.0)
    last = sim.run(400)[-1]
    assert last.halts[0].reason == HaltReason.CONTROL_PLANE_SUSPECT
    assert [h.evidence["zone"] for h in last.halts[1:]] == ["az1", "az2", "az3"]


def test_zone_gate_uses_the_fraction_rule() -> None:
    sim = zoned(5)
    az1 = sorted(a for a, z in sim.zones.items() if z == "az1")
    sim.silences = silence(az1[:3], 50.0)  # 3 of 5 in az1; 3 of 15 overall
    last = sim.run(400)[-1]
    assert last.reasons == {HaltReason.AZ_OUTAGE}


# --- clock jumps ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "seconds"),
    [
        *((ClockSource.LOCAL, s) for s in (3600.0, -3600.0, 30.0, -8.0)),
        # the server side is seen through heartbeats stamped somewhen within one
        # observation interval: jumps beyond tolerance + interval are always seen
        *((ClockSource.SERVER, s) for s in (3600.0, -3600.0, 30.0, -30.0)),
    ],
)
def test_clock_jump_halts_for_one_agent_down_time_then_lifts(
    source: ClockSource, seconds: float
) -> None:
    sim = fleet(10)
    steps_of = sim.wall_steps if source == ClockSource.LOCAL else sim.server_steps
    steps_of.append((200.0, seconds))
    steps = sim.run(500)
    assert all(s.halts == [] for s in steps if s.t < 200)
    jumped = [s for s in steps if HaltReason.CLOCK_JUMP in s.reasons]
    assert jumped, "no clock jump seen"
    halt = next(h for h in jumped[0].halts if h.reason == HaltReason.CLOCK_JUMP)
    assert halt.evidence["source"] == source.value
    assert halt.evidence["seconds"] == pytest.approx(seconds, abs=sim.interval + 2)
    assert jumped[0].t <= 200 + R + sim.interval  # seen within one report of the jump
    assert jumped[-1].t - jumped[0].t >= D - sim.interval
    assert all(not s.halts for s in steps if s.t >= jumped[0].t + D)
    assert all(v == Verdict.ALIVE for v in steps[-1].verdicts.values())


@pytest.mark.parametrize("seconds", [4.0, -4.0])
def test_steps_within_tolerance_are_no_jump(seconds: float) -> None:
    sim = fleet(10, wall_steps=[(200.0, seconds)], server_steps=[(300.0, seconds)])
    assert all(not s.halts for s in sim.run(600))


def test_steady_clocks_with_drift_and_slew_never_look_like_a_jump() -> None:
    sim = fleet(6, server_drift=1e-4, interval=5.0)
    sim.wall_steps = [(t, 0.02) for t in range(0, 6 * 3600, 60)]  # NTP slewing
    assert all(not s.halts for s in sim.run(6 * 3600))


def test_old_call_without_wall_clock_sees_no_local_jump() -> None:
    agents = [Agent(id="a", host="a", heartbeat_timestamp="x"), Agent(id="b", host="b")]
    state = observe(HealthState(), agents, 0.0, POLICY)
    state = observe(state, agents, 10.0, POLICY, wall=1e9)
    state = observe(state, agents, 20.0, POLICY)
    assert state.clock_jump is None


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2024-01-02 03:04:05", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC).timestamp()),
        ("2024-01-02T03:04:05.5", datetime(2024, 1, 2, 3, 4, 5, 500000, tzinfo=UTC).timestamp()),
        ("", None),
        ("b20", None),
    ],
)
def test_heartbeat_seconds(text: str, seconds: float | None) -> None:
    assert heartbeat_seconds(text) == seconds


# --- stale snapshots -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("ok", "took", "halts"),
    [
        (True, 0.5, False),
        (True, 10.0, False),
        (True, 10.5, True),
        (False, 0.1, True),
        (True, math.nan, True),
    ],
)
def test_snapshot_gate(ok: bool, took: float, halts: bool) -> None:
    halt = snapshot_gate(ok, took, 10.0)
    assert (halt is not None) == halts
    if halt is not None:
        assert halt.reason == HaltReason.STALE_SNAPSHOT and "\n" not in halt.message


# --- policy --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"agent_down_time": 0}, "--dead-after"),
        ({"agent_down_time": math.inf}, "--dead-after"),
        ({"dead_after_observations": 0}, "--dead-observations"),
        ({"dead_after_observations": 1.5}, "--dead-observations"),
        ({"max_dead_fraction": 0}, "--max-dead-fraction"),
        ({"max_dead_fraction": 1.01}, "--max-dead-fraction"),
        ({"min_dead_for_fraction": 0}, "min_dead_for_fraction"),
        ({"restart_grace_base": -1}, "restart_grace_base"),
        ({"report_interval": 75}, "report_interval"),
        ({"clock_jump_tolerance": math.nan}, "clock_jump_tolerance"),
    ],
)
def test_bad_policy_is_one_line_bad_input(fields: Mapping[str, float], named: str) -> None:
    with pytest.raises(BadInputError, match=named) as raised:
        HealthPolicy(**fields)  # type: ignore[arg-type]
    assert "\n" not in str(raised.value)


def test_policy_defaults_follow_neutron_and_kubernetes() -> None:
    policy = HealthPolicy()
    assert (policy.agent_down_time, policy.dead_after_observations) == (75.0, 3)
    assert (policy.max_dead_fraction, policy.min_dead_for_fraction) == (0.55, 3)
    assert policy.late_after == 45.0
    assert HealthPolicy(max_dead_fraction=1).max_dead_fraction == 1


# --- the one-shot commands' gate ------------------------------------------------------


def test_api_fleet_gate_from_alive_flags() -> None:
    healthy = [Agent(id=f"a{i}", host=f"net-{i}") for i in range(10)]
    one_dead = [*healthy[1:], Agent(id="a0", host="net-0", alive=False)]
    all_dead = [Agent(id=f"a{i}", host=f"net-{i}", alive=False) for i in range(10)]
    assert api_fleet_gate(healthy, POLICY) is None
    assert api_fleet_gate(one_dead, POLICY) is None
    halt = api_fleet_gate(all_dead, POLICY)
    assert halt is not None and halt.reason is HaltReason.CONTROL_PLANE_SUSPECT
    assert "10 of 10" in halt.message


def enabled_agents(total: int, dead: int) -> list[Agent]:
    return [Agent(id=f"a{i}", host=f"net-{i}", alive=i >= dead) for i in range(total)]


@pytest.mark.parametrize(
    ("total", "dead", "halts"),
    [
        (10, 5, False),  # 0.5: below the 0.55 fraction
        (10, 6, True),  # 0.6: at or above it
        (20, 10, False),
        (20, 11, True),  # 0.55 exactly trips it
        (4, 2, False),  # half, but fewer than min_dead_for_fraction (3)
        (5, 3, True),  # 3 of 5: the minimum count and 0.6
    ],
)
def test_majority_dead_trips_the_fraction_gate(total: int, dead: int, halts: bool) -> None:
    """Both sides of the boundary, and the reason and evidence when it trips."""
    assert (POLICY.max_dead_fraction, POLICY.min_dead_for_fraction) == (0.55, 3)
    halt = api_fleet_gate(enabled_agents(total, dead), POLICY)
    if not halts:
        assert halt is None
        return
    assert halt is not None and halt.reason is HaltReason.CONTROL_PLANE_SUSPECT
    assert f"{dead} of {total} enabled agents are reported dead at once" in halt.message
    assert halt.evidence == {
        "dead_agents": sorted(f"net-{i}" for i in range(dead)),
        "enabled_agents": total,
    }
