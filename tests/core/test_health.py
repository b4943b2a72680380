"""Agent health judgement from observed heartbeat changes, and the fleet safety gates.

Most tests drive a simulated fleet (``health_fleet``) the way Neutron behaves: each agent reports
every ``report_interval`` on its own phase, the server stamps the report with
its own clock (naive UTC, whole seconds), and l3ha observes every few seconds
on its monotonic clock. Outages silence agents for windows of time.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.core.health_fleet import FOREVER, POLICY, PROPERTY, D, Fleet, R, fleet, silence

from l3ha.health import (
    HealthState,
    Verdict,
    confirm_candidates,
    confirm_dead,
    dead_candidates,
    fleet_halts,
    mark_partitioned,
    observe,
    summarize,
    verdicts,
)
from l3ha.model import Agent, HaltReason


def test_one_agent_dead_among_ten_is_dead_and_nothing_halts() -> None:
    sim = fleet(10)
    sim.silences = silence(["n03"], 100.0)
    steps = sim.run(400)
    last = steps[-1]
    assert last.verdicts["n03"] == Verdict.DEAD
    assert all(v == Verdict.ALIVE for a, v in last.verdicts.items() if a != "n03")
    assert dead_candidates(last.verdicts) == ["n03"]
    assert all(not s.halts for s in steps)


@pytest.mark.parametrize("interval", [1.0, 10.0, 40.0])
def test_dead_needs_agent_down_time_and_n_consecutive_late_observations(interval: float) -> None:
    sim = Fleet({"a": 0.0, "b": 0.0, "c": 0.0}, silences=silence(["a"], 1.0), interval=interval)
    steps = sim.run(400)  # a's last heartbeat was written at t=0
    late = [s for s in steps if s.t > D - R]
    n = POLICY.dead_after_observations
    expected = next(s for i, s in enumerate(late) if s.t > D and i + 1 >= n)
    assert all(s.verdicts["a"] != Verdict.DEAD for s in steps if s.t < expected.t)
    assert all(s.verdicts["a"] == Verdict.SUSPECT for s in late if s.t < expected.t)
    assert expected.verdicts["a"] == Verdict.DEAD
    if interval * (n - 1) <= R:  # observed often enough: dead right after agent_down_time
        assert expected.t <= D + interval


def test_server_timestamp_is_never_compared_with_our_clock() -> None:
    # The server's clock is a day off; heartbeats still change, so the agents are alive.
    sim = fleet(3, server_steps=[(-1e9, -86400.0)])
    assert set(sim.run(300)[-1].verdicts.values()) == {Verdict.ALIVE}


@pytest.mark.parametrize(("routers", "grace"), [(0, 30.0), (20, 40.0), (200, 130.0)])
def test_restarted_agent_gets_grace_growing_with_its_routers(routers: int, grace: float) -> None:
    state = HealthState()
    agent = Agent(id="a", host="a", heartbeat_timestamp="h0", started_at="s0")
    state = observe(state, [agent], 0.0, POLICY)
    restarted = Agent(id="a", host="a", heartbeat_timestamp="h1", started_at="s1")
    state = observe(state, [restarted], 10.0, POLICY)
    assert verdicts(state, [restarted], 10.0 + grace - 1, POLICY, {"a": routers}) == {
        "a": Verdict.GRACE
    }
    assert verdicts(state, [restarted], 10.0 + grace + 1, POLICY, {"a": routers}) == {
        "a": Verdict.ALIVE
    }


def test_restarted_agent_that_goes_silent_is_not_acted_on_during_its_grace() -> None:
    sim = fleet(10, restarts={"n01": 50.0}, silences=silence(["n01"], 60.0))
    steps = sim.run(400)
    big = {"n01": 1000}  # grace of 530 s
    for step in steps:
        v = verdicts(step.state, sim.agents(step.t), step.t, POLICY, big)
        first = step is steps[0]  # nothing seen yet: observing, no more alive than dead
        assert v["n01"] in ((Verdict.OBSERVING,) if first else (Verdict.ALIVE, Verdict.GRACE))
        assert dead_candidates(v) == []


def test_disabled_agent_is_not_judged_dead_nor_counted_by_the_gate() -> None:
    agents = [Agent(id=f"a{i}", host=f"a{i}", admin_state_up=i > 2) for i in range(5)]
    state = HealthState()
    for t in range(0, 300, 10):
        state = observe(state, agents, float(t), POLICY)  # nobody's heartbeat ever changes
    v = verdicts(state, agents, 290.0, POLICY)
    assert [v[f"a{i}"] for i in range(3)] == [Verdict.DISABLED] * 3
    halt = next(iter(fleet_halts(state, v, 290.0, POLICY)), None)
    assert halt is not None and "2 of 2 agents" in halt.message  # disabled ones not counted


# --- partitioned agents (second channel) --------------------------------------------


def test_dead_agent_whose_data_plane_answers_is_partitioned_and_never_a_candidate() -> None:
    v = {"a": Verdict.DEAD, "b": Verdict.DEAD, "c": Verdict.SUSPECT, "d": Verdict.ALIVE}
    assert dead_candidates(v) == ["a", "b"]
    marked = mark_partitioned(v, {"b", "c", "d"})
    assert marked == {
        "a": Verdict.DEAD,
        "b": Verdict.PARTITIONED,
        "c": Verdict.SUSPECT,  # only DEAD agents change
        "d": Verdict.ALIVE,
    }
    assert dead_candidates(marked) == ["a"]
    assert v["b"] == Verdict.DEAD  # the input is not changed


def test_a_late_agent_is_a_confirm_candidate_after_n_late_observations_only() -> None:
    sim = Fleet({"a": 0.0, "b": 0.0, "c": 0.0}, silences=silence(["a"], 1.0), interval=1.0)
    steps = sim.run(D + 5)  # a's last heartbeat was written at t=0
    n = POLICY.dead_after_observations
    for s in steps:
        late = s.state.tracks["a"].stale_observations
        expected = ["a"] if late >= n and s.verdicts["a"] == Verdict.SUSPECT else []
        assert confirm_candidates(s.state, s.verdicts, s.t, POLICY) == expected
    first = next(s for s in steps if confirm_candidates(s.state, s.verdicts, s.t, POLICY))
    assert D - R < first.t < D  # before a heartbeat-only verdict could be reached
    assert first.verdicts["a"] == Verdict.SUSPECT
    assert all(s.verdicts[x] == Verdict.ALIVE for s in steps[-3:] for x in ("b", "c"))


def test_the_data_plane_confirms_only_a_dark_candidate_dead() -> None:
    v = {"a": Verdict.SUSPECT, "b": Verdict.SUSPECT, "c": Verdict.ALIVE, "d": Verdict.GRACE}
    confirmed = confirm_dead(v, ["a", "c", "d"], {"a", "b", "c", "d"})
    assert confirmed == {
        "a": Verdict.DEAD,  # a candidate and dark
        "b": Verdict.SUSPECT,  # dark but not (yet) a candidate
        "c": Verdict.ALIVE,  # only SUSPECT agents change
        "d": Verdict.GRACE,
    }
    assert confirm_dead(v, ["a"], set()) == v  # nothing dark: nothing changes
    assert v["a"] == Verdict.SUSPECT  # the input is not changed


def test_no_confirm_candidate_while_a_fleet_gate_holds() -> None:
    sim = fleet(5, silences=silence(["n00", "n01", "n02"], 50.0), interval=1.0)
    steps = sim.run(50.0 + D - 1)
    late = [s for s in steps if s.halts]
    assert late and all(s.reasons == {HaltReason.CONTROL_PLANE_SUSPECT} for s in late)
    assert any(
        s.state.tracks["n00"].stale_observations >= POLICY.dead_after_observations for s in late
    )
    assert all(confirm_candidates(s.state, s.verdicts, s.t, POLICY) == [] for s in late)


def test_summarize_counts_every_verdict() -> None:
    v = {"a": Verdict.DEAD, "b": Verdict.PARTITIONED, "c": Verdict.ALIVE, "d": Verdict.ALIVE}
    counts = summarize(v)
    assert set(counts) == {x.value for x in Verdict}
    assert counts["alive"] == 2 and counts["dead"] == 1 and counts["partitioned"] == 1
    assert counts["grace"] == 0 and sum(counts.values()) == 4
    assert summarize({}) == dict.fromkeys((x.value for x in Verdict), 0)


def test_partitioned_agents_still_count_towards_a_broad_outage() -> None:
    sim = fleet(5, silences=silence(["n00", "n01", "n02"], 50.0))
    last = sim.run(300)[-1]
    marked = mark_partitioned(last.verdicts, {"n00", "n01", "n02"})
    halt = next(iter(fleet_halts(last.state, marked, last.t, POLICY)), None)
    assert halt is not None and halt.reason == HaltReason.CONTROL_PLANE_SUSPECT


# --- the fraction gate ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("agents", "silent", "halts"),
    [
        (10, 1, False),
        (10, 2, False),
        (10, 5, False),  # 0.5 < 0.55
        (10, 6, True),
        (5, 3, True),  # 3 of 5: more than 2 and 0.6
        (4, 2, False),  # half, but only 2
        (3, 3, True),  # all
        (2, 2, True),  # all
        (1, 1, False),  # one agent alone is just dead
    ],
)
def test_fraction_gate(agents: int, silent: int, halts: bool) -> None:
    sim = fleet(agents)
    sim.silences = silence([f"n{i:02d}" for i in range(silent)], 60.0)
    last = sim.run(400)[-1]
    halt = next(iter(fleet_halts(last.state, last.verdicts, last.t, POLICY)), None)
    assert (halt is not None) == halts
    assert sum(v == Verdict.DEAD for v in last.verdicts.values()) == silent
    if halts:
        assert halt is not None and halt.reason == HaltReason.CONTROL_PLANE_SUSPECT
        assert len(halt.evidence["dead_agents"]) == silent  # type: ignore[arg-type]


def test_everything_silent_at_once_freezes_before_anyone_is_dead() -> None:
    sim = fleet(10, silences=silence([f"n{i:02d}" for i in range(10)], 100.0))
    steps = sim.run(400)
    first_dead = next(s for s in steps if dead_candidates(s.verdicts))
    first_halt = next(s for s in steps if s.halts)
    assert first_halt.t < first_dead.t
    assert all(HaltReason.CONTROL_PLANE_SUSPECT in s.reasons for s in steps if s.t >= first_dead.t)
    assert all(HaltReason.AZ_OUTAGE not in s.reasons for s in steps)  # one zone: the fleet


# --- broker outages ------------------------------------------------------------------


@st.composite
def broker_outages(draw: st.DrawFn) -> tuple[Fleet, float]:
    """All heartbeats stop for longer than agent_down_time (every agent goes stale), then
    the agents come back one by one, in any order, over up to one more agent_down_time.
    Agents are spread over up to three availability zones."""
    n = draw(st.integers(2, 25))
    names = [f"n{i:02d}" for i in range(n)]
    begin, length = draw(st.floats(20, 200)), draw(st.floats(D, 3 * D))
    spread = draw(st.floats(0, D))
    silences = {a: [(begin, begin + length + spread * draw(st.floats(0, 1)))] for a in names}
    phases = {a: draw(st.floats(0, R, exclude_max=True)) for a in names}
    zones = {a: f"az{draw(st.integers(1, 3))}" for a in names}
    interval = draw(st.sampled_from([2.0, 5.0, 10.0, 14.0]))
    sim = Fleet(phases, zones=zones, silences=silences, interval=interval)
    return sim, begin + length + spread


@PROPERTY
@given(outage=broker_outages())
def test_broker_restart_never_lets_a_dead_agent_through(outage: tuple[Fleet, float]) -> None:
    sim, all_back = outage
    for step in sim.run(all_back + 4 * D):
        if dead_candidates(step.verdicts):
            assert step.halts, f"t={step.t}: {dead_candidates(step.verdicts)} let through"
        assert HaltReason.CLOCK_JUMP not in step.reasons  # reconnecting is not a clock jump
    assert set(step.verdicts.values()) == {Verdict.ALIVE}
    assert step.halts == []


def test_rabbitmq_restart_with_staggered_reconnection_halts_then_lifts() -> None:
    names = [f"n{i:02d}" for i in range(10)]
    back = {a: 300.0 + 7.5 * i for i, a in enumerate(names)}  # over one dead-after
    sim = fleet(10, silences={a: [(75.0, back[a])] for a in names})
    steps = sim.run(800)
    seen = [s.halts[0].reason for s in steps if s.halts]
    assert seen[0] == HaltReason.CONTROL_PLANE_SUSPECT
    assert HaltReason.RECOVERY_GRACE in seen
    assert all(not dead_candidates(s.verdicts) or s.halts for s in steps)
    grace = [s for s in steps if s.reasons == {HaltReason.RECOVERY_GRACE}]
    assert grace[-1].t - grace[0].t >= D - sim.interval
    assert steps[-1].halts == [] and set(steps[-1].verdicts.values()) == {Verdict.ALIVE}


def test_unobserved_is_not_alive_an_agent_is_observing_until_its_heartbeat_changes() -> None:
    stale = Agent("a", "net-1", alive=False, heartbeat_timestamp="hb-14s-ago")
    state = observe(HealthState(), [stale], 0.0, POLICY)  # 'l3ha watch --once'
    assert verdicts(state, [stale], 0.0, POLICY) == {"a": Verdict.OBSERVING}
    state = observe(state, [stale], 10.0, POLICY)
    assert verdicts(state, [stale], 10.0, POLICY) == {"a": Verdict.OBSERVING}
    beating = replace(stale, heartbeat_timestamp="hb-now")
    state = observe(state, [beating], 20.0, POLICY)
    assert verdicts(state, [beating], 20.0, POLICY) == {"a": Verdict.ALIVE}


def test_a_silent_agent_is_observing_then_suspect_then_dead_never_alive() -> None:
    steps = fleet(10, silences=silence(["n03"], -100.0)).run(300)
    seen = [s.verdicts["n03"] for s in steps]
    assert Verdict.ALIVE not in seen and seen[0] is Verdict.OBSERVING and seen[-1] is Verdict.DEAD
    assert {s.verdicts["n00"] for s in steps if s.t > R} == {Verdict.ALIVE}  # it beat by then


def test_after_a_broad_outage_a_dead_agent_is_observing_never_alive_again() -> None:
    names = [f"n{i:02d}" for i in range(10)]
    silences = {a: [(75.0, 300.0)] for a in names}
    silences["n04"] = [(75.0, FOREVER)]
    steps = fleet(10, silences=silences).run(1000)
    after = [s for s in steps if s.t > 300.0]
    assert Verdict.ALIVE not in {s.verdicts["n04"] for s in after}
    assert Verdict.OBSERVING in {s.verdicts["n04"] for s in after}
    assert after[-1].verdicts["n04"] is Verdict.DEAD
    assert after[-1].verdicts["n00"] is Verdict.ALIVE


def test_agent_that_never_comes_back_after_a_broad_outage_is_dead_once_the_gates_lift() -> None:
    names = [f"n{i:02d}" for i in range(10)]
    silences = {a: [(75.0, 300.0)] for a in names}
    silences["n04"] = [(75.0, FOREVER)]
    steps = fleet(10, silences=silences).run(1000)
    last = steps[-1]
    assert last.halts == []
    assert dead_candidates(last.verdicts) == ["n04"]
    grace_end = max(s.t for s in steps if HaltReason.RECOVERY_GRACE in s.reasons)
    first_dead_free = next(s for s in steps if s.t > grace_end and dead_candidates(s.verdicts))
    assert first_dead_free.t >= grace_end + D  # silence counts again from the end of the grace
