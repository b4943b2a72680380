"""Agent health judgement from observed heartbeat changes, and the fleet safety gates.

Most tests drive a simulated fleet the way Neutron behaves: each agent reports
every ``report_interval`` on its own phase, the server stamps the report with
its own clock (naive UTC, whole seconds), and l3ha observes every few seconds
on its monotonic clock. Outages silence agents for windows of time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from l3ha.clockjump import ClockSource, heartbeat_seconds
from l3ha.errors import BadInputError
from l3ha.health import (
    HealthPolicy,
    HealthState,
    Verdict,
    api_fleet_gate,
    confirm_candidates,
    confirm_dead,
    dead_candidates,
    fleet_halts,
    mark_partitioned,
    observe,
    snapshot_gate,
    summarize,
    verdicts,
)
from l3ha.model import Agent, Halt, HaltReason

POLICY = HealthPolicy(agent_down_time=75.0, dead_after_observations=3)
D = POLICY.agent_down_time
R = POLICY.report_interval
EPOCH = 1_700_000_000.0
FOREVER = math.inf
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass
class Fleet:
    """Simulated agents: heartbeat phases, silences, zones, and the clocks."""

    phases: dict[str, float]
    zones: dict[str, str] = field(default_factory=dict)
    silences: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    restarts: dict[str, float] = field(default_factory=dict)  # agent -> time it restarted
    server_steps: list[tuple[float, float]] = field(default_factory=list)  # (at, seconds)
    wall_steps: list[tuple[float, float]] = field(default_factory=list)
    server_drift: float = 0.0  # server clock rate error (1e-4: 100 ppm)
    interval: float = 10.0

    def last_beat(self, agent: str, t: float) -> float:
        phase = self.phases[agent]
        tick = phase + math.floor((t - phase) / R) * R
        while True:
            window = next((w for w in self.silences.get(agent, []) if w[0] <= tick < w[1]), None)
            if window is None:
                return tick
            tick = phase + (math.ceil((window[0] - phase) / R) - 1) * R

    def stamp(self, written: float) -> str:
        server = written * (1 + self.server_drift) + sum(
            s for at, s in self.server_steps if at <= written
        )
        return datetime.fromtimestamp(EPOCH + server, UTC).strftime("%Y-%m-%d %H:%M:%S")

    def wall(self, t: float) -> float:
        return EPOCH + 1234.5 + t + sum(s for at, s in self.wall_steps if at <= t)

    def agents(self, t: float) -> list[Agent]:
        return [
            Agent(
                id=a,
                host=a,
                availability_zone=self.zones.get(a, "nova"),
                heartbeat_timestamp=self.stamp(self.last_beat(a, t)),
                started_at="s1" if t >= self.restarts.get(a, FOREVER) else "s0",
            )
            for a in sorted(self.phases)
        ]

    def run(self, until: float, start: float = 0.0, state: HealthState | None = None) -> list[Step]:
        """Observe every ``interval`` from ``start`` to ``until`` (inclusive)."""
        state = state or HealthState()
        steps = []
        t = start
        while t <= until:
            agents = self.agents(t)
            state = observe(state, agents, t, POLICY, wall=self.wall(t))
            v = verdicts(state, agents, t, POLICY)
            steps.append(Step(t, state, v, fleet_halts(state, v, t, POLICY)))
            t += self.interval
        return steps


@dataclass
class Step:
    t: float
    state: HealthState
    verdicts: dict[str, Verdict]
    halts: list[Halt]

    @property
    def reasons(self) -> set[HaltReason]:
        return {h.reason for h in self.halts}


def fleet(n: int, **kwargs: object) -> Fleet:
    """``n`` agents ``n00``.. with phases spread over one report interval."""
    return Fleet({f"n{i:02d}": (i * 7.3) % R for i in range(n)}, **kwargs)  # type: ignore[arg-type]


def silence(agents: list[str], start: float, end: float = FOREVER) -> dict[str, list[tuple]]:  # type: ignore[type-arg]
    return {a: [(start, end)] for a in agents}


def at(steps: list[Step], t: float) -> Step:
    return next(s for s in steps if s.t >= t)


# --- single agents -------------------------------------------------------------------


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
