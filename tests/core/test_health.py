"""Agent health judgement from observed heartbeat changes, and the fleet safety gates."""

from __future__ import annotations

from l3ha.health import (
    HealthPolicy,
    HealthState,
    Verdict,
    api_fleet_gate,
    fleet_gate,
    observe,
    verdicts,
)
from l3ha.model import Agent, HaltReason

POLICY = HealthPolicy(agent_down_time=75.0, dead_after_observations=3)


def _agents(beats: dict[str, str], started: dict[str, str] | None = None) -> list[Agent]:
    started = started or {}
    return [
        Agent(id=h, host=h, heartbeat_timestamp=b, started_at=started.get(h, "s0"))
        for h, b in sorted(beats.items())
    ]


def _run(steps: list[tuple[float, dict[str, str]]]) -> tuple[HealthState, list[Agent], float]:
    state = HealthState()
    agents: list[Agent] = []
    now = 0.0
    for now, beats in steps:
        agents = _agents(beats)
        state = observe(state, agents, now, POLICY)
    return state, agents, now


def _fleet(n: int, dead: set[str], t: float) -> dict[str, str]:
    return {f"n{i}": ("old" if f"n{i}" in dead else f"b{t}") for i in range(n)}


def test_changing_heartbeat_is_alive_and_stale_one_turns_dead_after_n_observations() -> None:
    steps = [(t, _fleet(10, {"n0"} if t > 0 else set(), t)) for t in range(0, 200, 20)]
    # n0's heartbeat last changed at t=20, so it is stale from t=100 on.
    state, agents, now = _run(steps[:7])  # stale at t=100 and t=120: two observations
    assert verdicts(state, agents, now, POLICY)["n0"] == Verdict.SUSPECT
    state, agents, now = _run(steps[:8])  # the third stale observation, at t=140
    v = verdicts(state, agents, now, POLICY)
    assert v["n0"] == Verdict.DEAD
    assert all(v[f"n{i}"] == Verdict.ALIVE for i in range(1, 10))
    assert fleet_gate(state, v, now, POLICY) is None


def test_server_timestamp_is_never_compared_with_our_clock() -> None:
    # The server's clock is an hour off; heartbeats still change, so the agent is alive.
    steps = [(float(t), {"a": f"1999-01-01 00:00:{t:02d}", "b": f"x{t}"}) for t in range(0, 60, 5)]
    state, agents, now = _run(steps)
    assert verdicts(state, agents, now, POLICY) == {"a": Verdict.ALIVE, "b": Verdict.ALIVE}


def test_everything_dead_at_once_freezes_as_control_plane_suspect() -> None:
    all_hosts = {f"n{i}" for i in range(10)}
    steps = [(t, _fleet(10, all_hosts if t > 0 else set(), t)) for t in range(0, 200, 20)]
    state, agents, now = _run(steps)
    v = verdicts(state, agents, now, POLICY)
    assert set(v.values()) == {Verdict.DEAD}
    halt = fleet_gate(state, v, now, POLICY)
    assert halt is not None
    assert halt.reason == HaltReason.CONTROL_PLANE_SUSPECT
    assert len(halt.evidence["dead_agents"]) == 10  # type: ignore[arg-type]


def test_majority_dead_trips_the_fraction_gate() -> None:
    dead = {f"n{i}" for i in range(6)}
    steps = [(t, _fleet(10, dead if t > 0 else set(), t)) for t in range(0, 200, 20)]
    state, agents, now = _run(steps)
    assert fleet_gate(state, verdicts(state, agents, now, POLICY), now, POLICY) is not None


def test_after_a_broad_outage_wait_one_agent_down_time() -> None:
    all_hosts = {f"n{i}" for i in range(4)}
    steps = [(t, _fleet(4, all_hosts if 0 < t < 160 else set(), t)) for t in range(0, 400, 20)]
    state, agents, now = _run(steps[:9])  # outage ends at t=160 (first fresh beats)
    v = verdicts(state, agents, now, POLICY)
    halt = fleet_gate(state, v, now, POLICY)
    assert halt is not None and halt.reason == HaltReason.RECOVERY_GRACE
    state, agents, now = _run(steps[:13])  # t=240: 80 s after the end
    assert fleet_gate(state, verdicts(state, agents, now, POLICY), now, POLICY) is None


def test_restarted_agent_gets_grace_growing_with_its_routers() -> None:
    state = HealthState()
    agent = Agent(id="a", host="a", heartbeat_timestamp="h0", started_at="s0")
    state = observe(state, [agent], 0.0, POLICY)
    restarted = Agent(id="a", host="a", heartbeat_timestamp="h1", started_at="s1")
    state = observe(state, [restarted], 10.0, POLICY)
    assert verdicts(state, [restarted], 50.0, POLICY, {"a": 0}) == {"a": Verdict.ALIVE}
    assert verdicts(state, [restarted], 50.0, POLICY, {"a": 200}) == {"a": Verdict.GRACE}


def test_disabled_agent_is_not_judged_dead() -> None:
    state = observe(HealthState(), [Agent(id="a", host="a", admin_state_up=False)], 0.0, POLICY)
    assert verdicts(state, [Agent(id="a", host="a", admin_state_up=False)], 0.0, POLICY) == {
        "a": Verdict.DISABLED
    }


def test_api_fleet_gate_from_alive_flags() -> None:
    healthy = [Agent(id=f"a{i}", host=f"net-{i}") for i in range(10)]
    one_dead = [*healthy[1:], Agent(id="a0", host="net-0", alive=False)]
    all_dead = [Agent(id=f"a{i}", host=f"net-{i}", alive=False) for i in range(10)]
    assert api_fleet_gate(healthy, POLICY) is None
    assert api_fleet_gate(one_dead, POLICY) is None
    halt = api_fleet_gate(all_dead, POLICY)
    assert halt is not None and "10 of 10" in halt.message
