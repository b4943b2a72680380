"""``l3ha check`` semantics on hand-built snapshots: severities, status line, perfdata."""

from __future__ import annotations

from l3ha.checks import run_check
from l3ha.hastate.audit import Severity
from l3ha.model import Agent, Binding, HAState, Router, Snapshot

AGENTS = (
    Agent(id="a1", host="net-1", availability_zone="az1"),
    Agent(id="a2", host="net-2", availability_zone="az2"),
)


def _spread(n_routers: int) -> tuple[tuple[Router, ...], tuple[Binding, ...]]:
    routers = tuple(Router(id=f"r{i}") for i in range(n_routers))
    bindings = tuple(Binding(r.id, AGENTS[i % 2].id) for i, r in enumerate(routers))
    return routers, bindings


def test_balanced_healthy_cloud_is_ok() -> None:
    routers, bindings = _spread(10)
    result = run_check(Snapshot(AGENTS, routers, bindings))
    assert result.severity == Severity.OK
    assert result.status_line().startswith("L3HA OK - ")
    assert "routers=10" in result.status_line()


def test_dead_agent_hosting_routers_is_critical_and_named() -> None:
    routers, bindings = _spread(10)
    agents = (AGENTS[0], Agent(id="a2", host="net-2", alive=False))
    result = run_check(Snapshot(agents, routers, bindings))
    assert result.severity == Severity.CRITICAL
    assert "dead agent net-2 hosts 5 router(s)" in result.status_line()
    assert "dead_agents=1" in result.status_line()


def test_unhosted_router_is_critical() -> None:
    routers, bindings = _spread(4)
    result = run_check(Snapshot(AGENTS, (*routers, Router(id="lost")), bindings))
    assert result.severity == Severity.CRITICAL
    assert [p.ids for p in result.problems if p.kind == "unhosted"] == [("lost",)]


def test_split_brain_is_critical() -> None:
    router = Router(id="ha", ha=True)
    bindings = (Binding("ha", "a1", HAState.ACTIVE), Binding("ha", "a2", HAState.ACTIVE))
    result = run_check(Snapshot(AGENTS, (router,), bindings))
    assert result.severity == Severity.CRITICAL
    assert any(p.kind == "ha_split_brain" for p in result.problems)


def test_imbalance_beyond_threshold_is_a_warning() -> None:
    routers = tuple(Router(id=f"r{i}") for i in range(30))
    bindings = tuple(Binding(r.id, "a1" if i < 24 else "a2") for i, r in enumerate(routers))
    result = run_check(Snapshot(AGENTS, routers, bindings))
    assert result.severity == Severity.WARNING
    assert "net-1 carries load 24" in result.status_line()
    assert run_check(Snapshot(AGENTS, routers, bindings), imbalance_threshold=80).severity == (
        Severity.OK
    )


def test_imbalance_is_judged_by_weight_not_count() -> None:
    # net-1: 2 busy routers (weight 20); net-2: 20 quiet routers (weight 20): balanced load.
    busy = tuple(Router(id=f"b{i}", tags=("l3ha:busy",)) for i in range(2))
    quiet = tuple(Router(id=f"q{i}") for i in range(20))
    bindings = tuple(Binding(r.id, "a1") for r in busy) + tuple(Binding(r.id, "a2") for r in quiet)
    assert run_check(Snapshot(AGENTS, busy + quiet, bindings)).severity == Severity.OK
    unweighted = tuple(Router(id=r.id) for r in busy) + quiet
    assert run_check(Snapshot(AGENTS, unweighted, bindings)).severity == Severity.WARNING


def test_disabled_agent_hosting_legacy_routers_is_critical() -> None:
    routers, bindings = _spread(6)
    agents = (AGENTS[0], Agent(id="a2", host="net-2", admin_state_up=False))
    result = run_check(Snapshot(agents, routers, bindings))
    assert result.severity == Severity.CRITICAL
    assert "disabled agent net-2 hosts 3 non-HA router(s)" in result.status_line()


def test_the_watch_daemons_halts_partitions_and_silence_are_warnings() -> None:
    from l3ha.checks import run_check, watch_problems
    from l3ha.hastate.audit import Severity
    from l3ha.model import Agent, Snapshot

    now = 1_000_000.0
    halted = {
        "updated": now - 5,
        "interval": 10,
        "halts": [{"reason": "control_plane_suspect", "message": "6 of 6 agents look dead"}],
        "partitioned": ["net-4"],
    }
    problems = watch_problems(halted, now)
    assert [p.kind for p in problems] == ["watch_halt_control_plane_suspect", "watch_partitioned"]
    assert "6 of 6 agents look dead" in problems[0].detail and "net-4" in problems[1].detail
    assert watch_problems({"updated": now - 5, "interval": 10}, now) == []
    (stale,) = watch_problems({"updated": now - 61, "interval": 10}, now)
    assert stale.kind == "watch_stale" and "61 s old" in stale.detail
    world = Snapshot((Agent("a", "net-1"), Agent("b", "net-2")), (), ())
    result = run_check(world, watch_status=halted, now=now)
    assert result.severity is Severity.WARNING
    assert "watch halted (control_plane_suspect)" in result.status_line()
    assert run_check(world).severity is Severity.OK


def test_a_halt_leads_the_status_line_before_the_dead_agents_it_explains() -> None:
    dead = tuple(Agent(f"a{i}", f"net-{i}", alive=False) for i in range(1, 5))
    routers = tuple(Router(id=f"r{i}") for i in range(8))
    bindings = tuple(Binding(r.id, dead[i % 4].id) for i, r in enumerate(routers))
    now = 1_000_000.0
    halted = {
        "updated": now - 5,
        "interval": 10,
        "halts": [{"reason": "broad_outage", "message": "4 of 4 agents look dead"}],
    }
    result = run_check(Snapshot(dead, routers, bindings), watch_status=halted, now=now)
    assert result.severity is Severity.CRITICAL
    line = result.status_line()
    assert line.startswith("L3HA CRITICAL - watch halted (broad_outage): 4 of 4 agents look dead;")
    assert "dead agent net-1 hosts 2 router(s)" in line and "(+2 more)" in line


def test_a_cleanly_stopped_daemon_is_ok_unless_one_is_expected() -> None:
    routers, bindings = _spread(10)
    world = Snapshot(AGENTS, routers, bindings)
    now = 1_000_000.0
    stopped = {"state": "stopped", "updated": 0.0, "interval": 10, "halts": []}
    result = run_check(world, watch_status=stopped, now=now)  # stopped for 11 days: not stale
    assert result.severity is Severity.OK
    line = result.status_line()
    assert line.count("'l3ha watch' stopped cleanly at 1970-01-01 00:00:00 UTC") == 1
    assert "stale" not in line and line.startswith("L3HA OK - all routers hosted")
    expected = run_check(world, watch_status=stopped, now=now, expect_daemon=True)
    assert expected.severity is Severity.WARNING
    assert "stopped cleanly" in expected.status_line()
    absent = run_check(world, now=now, expect_daemon=True)
    assert absent.severity is Severity.WARNING
    assert "no status from 'l3ha watch' here" in absent.status_line()
    assert run_check(world, now=now).status_line().count(";") == 0  # no daemon, not expected
