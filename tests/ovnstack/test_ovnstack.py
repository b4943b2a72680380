"""A real OVN cloud in a box: gateway chassis fail over by BFD and pre-empt back; l3ha's
evacuate and drain on it.

One stack for the module (``l3ha.lab.stack.ovnstack``: OVN central, Neutron ML2/OVN on
MariaDB, three gateway chassis each with its own ovsdb-server, userspace ovs-vswitchd and
ovn-controller, namespaces ``l3ov-*``, three routers); the tests run in file order on it:
the baseline (kill the chassis primary for a router, measure the gateway's silence, revive
it: it pre-empts back, the failback outage l3ha is to prevent); ``l3ha agent list``,
``router list`` and ``check`` through the stack's clouds.yaml; kill a primary again,
``l3ha evacuate`` it once the API shows it dead, revive it (no router fails back: no
silence); ``l3ha drain --probe icmp`` a live primary, run in the client namespace where
the gateways answer (each drained router's silence measured from the client); the
southbound database stopped 3 s (the gateways keep answering); ``l3ha watch`` evacuating
a crashed chassis; rebalance by floating IPs; undrain --rebalance; ``l3ha rolling`` over
one gateway node whose ovn-controller and Open vSwitch restart (no fail-back, no router
dark longer than a graceful move); ``l3ha watch --auto-rebalance`` through a 30 s
southbound restart (a halt, nothing written, then the balance Neutron broke restored once
the grace passed, each router moved at most once); teardown.
Needs root, the packages of scripts/install-system-deps.sh (ovn-central, ovn-host) and the
Neutron virtualenv (``L3HA_NEUTRON_PYTHON``); skips with the reason without them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.ovnstack.ovn_stack_helpers import (
    CRASH_FAILOVER_S,
    DEAD_TIMEOUT_S,
    FAILOVER_LIMIT_S,
    GRACE_BASE_S,
    GRACE_LEFT_S,
    GRACEFUL_S,
    NEUTRON_REACTS_S,
    NO_OUTAGE_S,
    REBALANCE_TIMEOUT_S,
    ROLLING_S,
    WATCH_S,
    PrimarySampler,
    all_alive,
    answering_all,
    assert_moves_graceful,
    at,
    by_name,
    demoted,
    fault,
    groups,
    l3ha,
    l3ha_in_client,
    leftovers,
    moves_of,
    moves_per_router,
    moves_while_halted,
    needs_stack,
    planned_rebalance,
    primaries_per_host,
    problem_kinds,
    report,
    rolling,
    skew_onto,
    spread,
    step_times,
    wait_alive,
    wait_only_dead,
    wait_primary,
    watching,
)

from l3ha.cli.main import main
from l3ha.lab.stack.ovnspec import AGENT_TYPE, OVN_CLIENT_NS, OvnSpec
from l3ha.lab.stack.ovnstack import OvnStack, ovn_stack_up, ovn_teardown
from l3ha.lab.stack.ovntopology import add_floating_ip, longest_silence, longest_silences
from l3ha.lab.stack.relay import relay_into


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OvnStack]:
    """The module's one OVN stack; torn down, nothing left."""
    directory = tmp_path_factory.mktemp("ovn") / "stack"
    began = time.monotonic()
    up = ovn_stack_up(OvnSpec(chassis=3, routers=3), directory)
    report(f"up in {time.monotonic() - began:.1f} s")
    try:
        yield up
    finally:
        assert main(["lab", "stack", "down", "--dir", str(directory)]) == 0
        ovn_teardown(directory)  # nothing left to do unless ``down`` failed
    assert leftovers(directory) == []


@pytest.fixture(autouse=True)
def every_chassis_running_after(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that failed with a chassis killed revives it: the tests after it share the
    stack (one run had three more fail waiting for a chassis no one revived)."""
    yield
    if "stack" in request.fixturenames:
        stack: OvnStack = request.getfixturevalue("stack")
        for host in stack.spec.hosts:
            if f"{host}/controller" not in stack.state.pids:
                fault(stack, "revive-node", host)


@pytest.fixture(scope="module")
def api_in_client(stack: OvnStack) -> Iterator[None]:
    """The stack's API relayed into the client namespace, for l3ha's data-plane probes."""
    relay = relay_into(OVN_CLIENT_NS, stack.api_port)
    try:
        yield
    finally:
        relay.kill()
        relay.wait(10)


@pytest.mark.root
@pytest.mark.neutron
@pytest.mark.slow
@needs_stack
def test_gateway_fails_over_by_bfd_and_pre_empts_back(stack: OvnStack) -> None:
    agents = stack.api.agents(AGENT_TYPE)
    assert sorted(a["host"] for a in agents if a["alive"]) == list(stack.spec.hosts)
    answering_all(stack)
    router = stack.routers[0]
    victim = stack.primary(router)
    assert victim in stack.spec.hosts
    address = router["gateway_ip"]
    silent = longest_silence(address, WATCH_S, lambda: fault(stack, "kill-node", victim))
    report(f"kill {victim}: gateway silent {silent:.1f} s, now on {stack.primary(router)}")
    assert silent < FAILOVER_LIMIT_S
    assert stack.primary(router) not in ("", victim)
    silent = longest_silence(address, WATCH_S, lambda: fault(stack, "revive-node", victim))
    back = wait_primary(stack, router, victim, 10.0)
    report(f"revive {victim}: pre-empted back: {back >= 0}; gateway silent {silent:.1f} s")
    answering_all(stack)
    wait_alive(stack, victim, True, DEAD_TIMEOUT_S)


@pytest.mark.root
@pytest.mark.neutron
@pytest.mark.slow
@needs_stack
def test_l3ha_lists_the_real_chassis_alive_in_priority_order(
    stack: OvnStack, capsys: pytest.CaptureFixture[str]
) -> None:
    all_alive(stack)  # Neutron's agent cache lags after the failover and the return
    code, rows, err = l3ha(stack, capsys, "agent", "list")
    assert code == 0, err
    assert [(r["host"], r["alive"]) for r in rows] == [(h, True) for h in stack.spec.hosts]
    assert sum(r["primaries"] for r in rows) == len(stack.routers)
    code, rows, err = l3ha(stack, capsys, "router", "list")
    assert code == 0, err
    api = groups(stack)
    by_name = {r["name"]: r for r in rows}
    for router in stack.routers:
        row = by_name[router["name"]]
        assert row["chassis"] == [f"{h}({p})" for h, p, _ in api[router["name"]]]
        assert row["primary"] == stack.primary(router)
    report(f"router list: {[(r['name'], r['chassis']) for r in rows]}")
    code, doc, err = l3ha(stack, capsys, "check")
    assert (code, doc["status"], doc["perfdata"]["chassis"]) == (0, "OK", 3), doc


@pytest.mark.root
@pytest.mark.neutron
@pytest.mark.slow
@needs_stack
def test_an_evacuated_chassis_does_not_fail_back_when_it_returns(
    stack: OvnStack, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    router = stack.routers[0]
    victim = stack.primary(router)
    fault(stack, "kill-node", victim)
    dead_after = wait_only_dead(stack, victim)
    report(f"kill {victim}: the API reads it dead (and another alive) after {dead_after:.1f} s")
    code, doc, _ = l3ha(stack, capsys, "check")
    assert code == 1 and "failback_pending" in problem_kinds(doc), doc
    code, _, err = l3ha(stack, capsys, "evacuate", victim, "--state-dir", str(tmp_path))
    assert code == 0, err
    _, doc, _ = l3ha(stack, capsys, "check")
    assert "failback_pending" not in problem_kinds(doc), doc
    after = groups(stack)
    report(f"evacuate {victim}: groups {after}")
    for rows in after.values():
        assert victim not in [h for h, _, _ in rows]
        assert sum(1 for _, _, alive in rows if alive) >= 2
    answering_all(stack)
    addresses = [r["gateway_ip"] for r in stack.routers]
    silent = longest_silences(addresses, WATCH_S, lambda: fault(stack, "revive-node", victim))
    wait_alive(stack, victim, True, DEAD_TIMEOUT_S)
    report(f"revive {victim} after evacuate: longest silence per gateway "
           f"{ {a: round(s, 1) for a, s in silent.items()} }; groups {groups(stack)}")  # fmt: skip
    assert max(silent.values()) < NO_OUTAGE_S, silent
    assert victim not in [stack.primary(r) for r in stack.routers]


@pytest.mark.root
@pytest.mark.neutron
@pytest.mark.slow
@needs_stack
def test_a_drain_moves_each_primary_gracefully(
    stack: OvnStack, api_in_client: None, tmp_path: Path
) -> None:
    """``--probe icmp``: each move is done only once its router answers from the client."""
    for host in stack.spec.hosts:
        wait_alive(stack, host, True, DEAD_TIMEOUT_S)
    primaries = {r["name"]: stack.primary(r) for r in stack.routers}
    host = max(stack.spec.hosts, key=lambda h: list(primaries.values()).count(h))
    drained = [r for r in stack.routers if primaries[r["name"]] == host]
    assert drained
    result: list[tuple[int, Any, str, float]] = []

    def drain() -> None:
        began = time.monotonic()
        code, doc, err = l3ha_in_client(stack, "drain", host, "--probe", "icmp",
                                        "--state-dir", str(tmp_path))  # fmt: skip
        result.append((code, doc, err, time.monotonic() - began))

    silent = longest_silences([r["gateway_ip"] for r in stack.routers], 20.0, drain)
    ((code, doc, err, took),) = result
    per_router = {r["name"]: round(silent[r["gateway_ip"]], 1) for r in stack.routers}
    seconds = {m["router"]: m["seconds"] for m in doc["moves"] if m["outcome"] == "moved"}
    report(f"drain --probe icmp {host} ({len(drained)} primaries) in {took:.1f} s: "
           f"silence per router {per_router}, each move until it answered {seconds}, "
           f"groups {groups(stack)}")  # fmt: skip
    assert code == 0, err
    assert set(seconds) == {r["id"] for r in drained}
    after = groups(stack)
    for router in drained:
        assert stack.primary(router) not in ("", host)
        rows = after[router["name"]]
        assert rows[-1][0] == host
        assert silent[router["gateway_ip"]] < CRASH_FAILOVER_S
    for router in stack.routers:
        if router not in drained:
            assert silent[router["gateway_ip"]] < NO_OUTAGE_S


@pytest.mark.root
@pytest.mark.neutron
@pytest.mark.slow
@needs_stack
def test_a_southbound_outage_does_not_silence_the_gateways(stack: OvnStack) -> None:
    router = stack.routers[0]
    silent = longest_silence(router["gateway_ip"], 8.0, lambda: fault(stack, "sb-outage", "3"))
    report(f"southbound down 3 s: gateway silent {silent:.1f} s (the data plane keeps going)")
    assert silent < FAILOVER_LIMIT_S
    # Once the southbound is back Neutron may re-prioritise groups (docs/ovn.md: it demotes
    # a chassis), a graceful move of about 1 s per router: every gateway answers again soon.
    # Its reaction comes 5-15 s after the return: look past it (one answering look right
    # after the outage was seen to pass just before Neutron moved a router).
    began = time.monotonic()
    wanted = [r["gateway_ip"] for r in stack.routers]
    while time.monotonic() - began < 45:
        if time.monotonic() - began > NEUTRON_REACTS_S and stack.answering() == wanted:
            break
        time.sleep(0.5)
    report(f"every gateway answering {time.monotonic() - began:.1f} s after the outage")
    answering_all(stack)


@pytest.fixture
def watch(stack: OvnStack, tmp_path: Path) -> Iterator[Any]:
    with watching(stack, tmp_path / "state") as process:
        yield process


@pytest.mark.root
@pytest.mark.neutron
@pytest.mark.slow
@needs_stack
def test_watch_evacuates_a_dead_chassis_and_nothing_fails_back(stack: OvnStack, watch: Any) -> None:
    for host in stack.spec.hosts:
        wait_alive(stack, host, True, DEAD_TIMEOUT_S)
    router = stack.routers[0]
    victim = stack.primary(router)
    began = time.monotonic()
    fault(stack, "kill-node", victim)
    action = watch.wait_event("action", timeout=DEAD_TIMEOUT_S, agent_host=victim)
    dead_after = time.monotonic() - began
    watch.wait_event("move", timeout=60)
    deadline = time.monotonic() + 60
    while any(victim in [h for h, _, _ in rows] for rows in groups(stack).values()):
        assert time.monotonic() < deadline, f"{victim} still in a group: {watch.tail()}"
        time.sleep(1.0)
    report(f"watch: {victim} evacuated {dead_after:.1f} s after its crash ({action['reason']}); "
           f"groups {groups(stack)}")  # fmt: skip
    answering_all(stack)
    addresses = [r["gateway_ip"] for r in stack.routers]
    silent = longest_silences(addresses, WATCH_S, lambda: fault(stack, "revive-node", victim))
    wait_alive(stack, victim, True, DEAD_TIMEOUT_S)
    report(f"watch: revive {victim}: longest silence per gateway "
           f"{ {a: round(s, 1) for a, s in silent.items()} }")  # fmt: skip
    assert max(silent.values()) < NO_OUTAGE_S, silent
    assert victim not in [stack.primary(r) for r in stack.routers]
    assert {e["outcome"] for e in moves_of(watch)} <= {"removed", "replaced"}, watch.tail()
    assert watch.terminate() == 0


@pytest.mark.root
@pytest.mark.neutron
@pytest.mark.slow
@needs_stack
def test_a_rebalance_by_floating_ips_spreads_the_busy_routers(
    stack: OvnStack, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    all_alive(stack)
    busy = stack.routers[:2]
    for router in busy:
        add_floating_ip(stack.api, router)
    skew_onto(stack, stack.spec.hosts[0])
    report(f"skewed: primaries {primaries_per_host(stack)}, groups {groups(stack)}")
    result: list[tuple[int, Any, str]] = []

    def rebalance() -> None:
        argv = ("rebalance", "--busy-fips", "1", "--state-dir", str(tmp_path))
        result.append(l3ha(stack, capsys, *argv))

    silent = longest_silences([r["gateway_ip"] for r in stack.routers], 12.0, rebalance)
    ((code, doc, err),) = result
    assert code == 0, err
    moved = {m["router"] for m in doc["moves"] if m["outcome"] == "moved"}
    spread = primaries_per_host(stack)
    report(f"rebalance by floating IPs: {len(moved)} moved (lower bound {doc['lower_bound']}), "
           f"primaries {spread}, silence per gateway {by_name(stack, silent)}, "
           f"groups {groups(stack)}")  # fmt: skip
    assert len(moved) == doc["lower_bound"] == 2
    assert sorted(len(names) for names in spread.values()) == [1, 1, 1]
    assert len({stack.primary(r) for r in busy}) == 2  # the busy routers apart
    assert_moves_graceful(stack, moved, silent)


@pytest.mark.root
@pytest.mark.neutron
@pytest.mark.slow
@needs_stack
def test_undrain_with_rebalance_brings_primaries_back_gracefully(
    stack: OvnStack, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    state = ("--state-dir", str(tmp_path))
    all_alive(stack)  # Neutron's agent cache reads every chassis dead a while after a burst
    host = next(h for h, names in primaries_per_host(stack).items() if names)
    code, _, err = l3ha(stack, capsys, "drain", host, *state)
    assert code == 0, err
    code, doc, err = l3ha(stack, capsys, "rebalance", *state)
    assert (code, doc["counts"]["moved"]) == (0, 0), err  # the drained chassis is no target
    all_alive(stack)
    result: list[tuple[int, Any, str]] = []

    def undrain() -> None:
        result.append(l3ha(stack, capsys, "undrain", host, "--rebalance", *state))

    silent = longest_silences([r["gateway_ip"] for r in stack.routers], 12.0, undrain)
    ((code, doc, err),) = result
    assert code == 0, err
    moved = {m["router"] for m in doc["moves"] if m["outcome"] == "moved"}
    report(f"undrain {host} --rebalance: {len(moved)} moved back, primaries "
           f"{primaries_per_host(stack)}, silence {by_name(stack, silent)}")  # fmt: skip
    assert len(moved) == 1 and primaries_per_host(stack)[host]
    assert_moves_graceful(stack, moved, silent)


@pytest.mark.root
@pytest.mark.neutron
@pytest.mark.slow
@needs_stack
def test_rolling_over_a_gateway_node_keeps_every_router_answering(
    stack: OvnStack, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    all_alive(stack)
    primaries = primaries_per_host(stack)
    host = max(stack.spec.hosts, key=lambda h: len(primaries[h]))
    state = tmp_path / "state"
    result: list[tuple[int, dict[str, Any], str]] = []
    addresses = [r["gateway_ip"] for r in stack.routers]
    with PrimarySampler(stack) as sampler:
        run = lambda: result.append(rolling(stack, state, host))  # noqa: E731
        silent = longest_silences(addresses, ROLLING_S, run, stop_after=3.0)
    ((code, doc, err),) = result
    steps = step_times(state)
    failed_back = sampler.on(host, steps["drain"][1], steps["restore"][0])
    plan = planned_rebalance(stack, capsys, state)
    report(f"rolling over {host} ({len(primaries[host])} primaries, restart-agents --with-ovs): "
           f"exit {code}, silence per router {by_name(stack, silent)}, fail-backs "
           f"{sorted(failed_back)}, primaries {primaries_per_host(stack)}")  # fmt: skip
    assert code == 0, err
    assert [h["status"] for h in doc["hosts"]] == ["done"], doc
    assert failed_back == set(), sampler.samples
    assert max(silent.values()) < GRACEFUL_S, by_name(stack, silent)
    assert all(n == 1 for moved in moves_per_router(state) for n in moved.values())
    assert plan["counts"].get("planned", 0) == 0, plan  # balanced by l3ha's weights
    assert plan["primaries"][host][0] >= 1, plan  # undrained: it has primaries again


@pytest.mark.root
@pytest.mark.neutron
@pytest.mark.slow
@needs_stack
def test_watch_halts_through_a_southbound_restart_then_auto_rebalances_once(
    stack: OvnStack, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    all_alive(stack)
    code, _, err = l3ha(stack, capsys, "rebalance", "--state-dir", str(tmp_path / "before"))
    assert code == 0, err
    before = primaries_per_host(stack)
    state = tmp_path / "state"
    with watching(stack, state, "--auto-rebalance") as watch:
        fault(stack, "sb-outage", "30")  # longer than dead_after: every chassis goes silent
        halt = watch.wait_event("halt", timeout=5)
        resumed = watch.wait_event("resumed", timeout=DEAD_TIMEOUT_S)
        # Neutron reacts 5-15 s after the return; the gates hold l3ha longer (one
        # agent_down_time after a broad outage): what Neutron left, before l3ha's grace ends.
        left, left_groups, down = primaries_per_host(stack), groups(stack), demoted(stack)
        saw = (f"Neutron demoted {down} to 0 in every group" if down else
               "Neutron demoted no chassis on this run") + f": primaries {left}"  # fmt: skip

        def balanced_after_grace() -> None:
            """Until the primaries are even and l3ha's moves (if any) have stopped, or the
            grace passed without any."""
            began, seen = time.monotonic(), -1
            while time.monotonic() - began < REBALANCE_TIMEOUT_S:
                moves = len(moves_of(watch))
                still = moves == seen and (moves or time.monotonic() - began > GRACE_LEFT_S)
                if still and spread(stack) <= 1:
                    return
                seen = moves
                time.sleep(3.0)

        addresses = [r["gateway_ip"] for r in stack.routers]
        silent = longest_silences(addresses, REBALANCE_TIMEOUT_S + 10, balanced_after_grace, 3.0)
        events = watch.events()
        assert watch.terminate() == 0
    per_op = moves_per_router(state, ("ovn-rebalance",))
    moved = {r for counts in per_op for r in counts}
    plan = planned_rebalance(stack, capsys, state)
    report(f"watch --auto-rebalance, southbound down 30 s: {halt['reason']}; {saw}, groups "
           f"{left_groups}; before {before}; l3ha moved {len(moved)} once the grace passed: "
           f"primaries {primaries_per_host(stack)}, silence {by_name(stack, silent)}")  # fmt: skip
    assert moves_while_halted(events) == [], (saw, watch.tail())
    returns = [e for e in events if e["event"] == "verdict" and e.get("was") == "dead"]
    back = max((at(e) for e in returns if e.get("verdict") == "alive"), default=at(halt))
    early = [e for e in moves_of(watch) if at(e) < max(back + GRACE_BASE_S, at(resumed))]
    assert early == [], f"moved within the grace; {saw}"
    assert sum(sum(c.values()) for c in per_op) == len(moved), (saw, per_op)  # once each
    assert plan["counts"].get("planned", 0) == 0, (saw, plan)  # balanced by l3ha's weights
    assert_moves_graceful(stack, moved, silent)
