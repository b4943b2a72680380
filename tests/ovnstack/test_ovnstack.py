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

import ipaddress
import itertools
import json
import os
import shlex
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from l3ha.cli.main import main
from l3ha.errors import BadInputError
from l3ha.health import HealthPolicy
from l3ha.journal import Journal
from l3ha.lab.netns import list_namespaces
from l3ha.lab.stack.ovnspec import (
    AGENT_TYPE,
    MAX_OVN_ROUTERS,
    OVN_CLIENT_NS,
    OvnSpec,
    ovn_tenant_cidr,
    ovn_tenant_router_ip,
    owns_ovn_namespace,
)
from l3ha.lab.stack.ovnstack import OvnStack, missing_programs, ovn_stack_up, ovn_teardown
from l3ha.lab.stack.ovntopology import (
    add_floating_ip,
    longest_silence,
    longest_silences,
    raise_chassis,
)
from l3ha.lab.stack.processes import StackError, pids_naming
from l3ha.lab.stack.relay import relay_into
from l3ha.lab.stack.services import check_pymysql, neutron_python
from l3ha.lab.stack.spec import CLOUD_NAME, EXTERNAL_CIDR

FAILOVER_LIMIT_S = 15.0  # BFD detects in ~3 s; generous for a loaded machine
CRASH_FAILOVER_S = 3.5  # the measured crash failover a graceful move must stay below
NO_OUTAGE_S = 0.5  # a few lost echoes at 0.1 s at most
WATCH_S = 12.0
DEAD_TIMEOUT_S = 90.0  # agent_down_time 15 plus Neutron's pings, on a loaded machine


def missing_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces, Open vSwitch)"
    missing = missing_programs()
    if missing:
        return f"needs {', '.join(missing)} (scripts/install-system-deps.sh)"
    try:
        check_pymysql(neutron_python())
    except StackError as exc:
        return f"needs the Neutron virtualenv with PyMySQL: {exc}"
    return None


REASON = missing_reason()
needs_stack = pytest.mark.skipif(REASON is not None, reason=REASON or "")


def leftovers(directory: Path) -> list[str]:
    found = [n for n in list_namespaces() if owns_ovn_namespace(n)]
    found += [f"pid {p}" for p in pids_naming(str(directory) + "/")]
    return found + ([str(directory)] if directory.exists() else [])


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


def fault(stack: OvnStack, *args: str) -> None:
    """A fault through the CLI, as an operator rehearses."""
    assert main(["lab", "stack", "fault", *args, "--dir", str(stack.layout.root)]) == 0


def l3ha(stack: OvnStack, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    """Run l3ha on the stack's cloud (its clouds.yaml) with JSON output; its exit code, parsed
    output (None if none) and stderr. What the test printed before is passed through."""
    earlier = capsys.readouterr().out
    with capsys.disabled():
        sys.stdout.write(earlier)
    with pytest.MonkeyPatch.context() as patch:  # the suite's autouse fixture hides any cloud
        patch.setenv("OS_CLIENT_CONFIG_FILE", str(stack.layout.root / "clouds.yaml"))
        patch.setenv("OS_CLOUD", CLOUD_NAME)
        code = main([*argv, "-f", "json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


@pytest.fixture(scope="module")
def api_in_client(stack: OvnStack) -> Iterator[None]:
    """The stack's API relayed into the client namespace, for l3ha's data-plane probes."""
    relay = relay_into(OVN_CLIENT_NS, stack.api_port)
    try:
        yield
    finally:
        relay.kill()
        relay.wait(10)


def l3ha_in_client(stack: OvnStack, *argv: str) -> tuple[int, Any, str]:
    """``l3ha`` run in the client namespace (``api_in_client``): exit code, JSON, stderr."""
    done = stack.l3ha_in_client(*argv, "-f", "json")
    return done.returncode, (json.loads(done.stdout) if done.stdout.strip() else None), done.stderr


def wait_primary(stack: OvnStack, router: dict[str, str], host: str, timeout: float) -> float:
    """Seconds until ``host`` is the router's primary again, or -1 if it is not by ``timeout``."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if stack.primary(router) == host:
            return time.monotonic() - began
        time.sleep(0.2)
    return -1.0


def wait_alive(stack: OvnStack, host: str, alive: bool, timeout: float) -> float:
    """Seconds until the API reads ``host`` alive (or dead); fails after ``timeout``."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        agents = {a["host"]: a["alive"] for a in stack.api.agents(AGENT_TYPE)}
        if agents.get(host) is alive:
            return time.monotonic() - began
        time.sleep(1.0)
    raise AssertionError(f"{host} not read alive={alive} within {timeout} s")


def wait_only_dead(stack: OvnStack, victim: str) -> float:
    """Seconds until the API reads ``victim`` dead and another chassis alive: right after a
    crash Neutron's agent cache was seen to read every chassis dead at once."""
    began = time.monotonic()
    while time.monotonic() - began < DEAD_TIMEOUT_S:
        agents = {a["host"]: a["alive"] for a in stack.api.agents(AGENT_TYPE)}
        if agents.get(victim) is False and any(agents.values()):
            return time.monotonic() - began
        time.sleep(1.0)
    raise AssertionError(f"{victim} not read dead alone within {DEAD_TIMEOUT_S} s")


def groups(stack: OvnStack) -> dict[str, list[tuple[str, int, bool]]]:
    """Each router's chassis from the API, highest priority first: (host, priority, alive)."""
    found = {}
    for router in stack.routers:
        agents = stack.api.get(f"routers/{router['id']}/l3-agents")["agents"]
        rows = [(a["host"], int(a["ha_chassis_priority"]), bool(a["alive"])) for a in agents]
        found[router["name"]] = sorted(rows, key=lambda row: -row[1])
    return found


def problem_kinds(doc: dict[str, Any]) -> list[str]:
    """The kinds of problem ``l3ha check -f json`` reported."""
    return [p["kind"] for p in doc["problems"]]


def report(line: str) -> None:
    print(f"ovnstack: {line}")


def answering_all(stack: OvnStack) -> None:
    assert stack.answering() == [r["gateway_ip"] for r in stack.routers]


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


def test_ovn_stack_refuses_ml2_ovs_options(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["lab", "stack", "up", "--ovn", "--nodes", "3", "--routers", "1", "--dhcp"]
    assert main([*argv, "--dir", "/nonexistent/l3ov-test"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--ovn takes no" in err[0]


def test_ml2_ovs_stack_still_needs_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lab", "stack", "up", "--routers", "1", "--dir", "/nonexistent/l3ov-t"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--nodes is required" in err[0]


def test_sb_outage_needs_an_ovn_stack(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lab", "stack", "fault", "sb-outage", "1", "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no OVN stack is up" in err[0]


def test_the_address_plan_fits_255_routers_apart_from_the_external_network() -> None:
    spec = OvnSpec(chassis=3, routers=MAX_OVN_ROUTERS)
    assert MAX_OVN_ROUTERS >= 100
    subnets = [ipaddress.ip_network(ovn_tenant_cidr(k)) for k in spec.router_indexes]
    external = ipaddress.ip_network(EXTERNAL_CIDR)
    assert len(set(subnets)) == len(subnets)
    assert not any(a.overlaps(b) for a, b in itertools.combinations([external, *subnets], 2))
    for k, subnet in zip(spec.router_indexes, subnets, strict=True):
        assert ipaddress.ip_address(ovn_tenant_router_ip(k)) == next(subnet.hosts())
    with pytest.raises(BadInputError, match="--routers must be 0-255"):
        OvnSpec(routers=MAX_OVN_ROUTERS + 1)


def skew_onto(stack: OvnStack, host: str) -> None:
    """Every router's primary onto ``host`` (one graceful move each), as if Neutron's
    scheduler had left them there; waits until the southbound binds them there."""
    agent = next(a["id"] for a in stack.api.agents(AGENT_TYPE) if a["host"] == host)
    for router in stack.routers:
        raise_chassis(stack.api, router["id"], agent)
    for router in stack.routers:
        assert wait_primary(stack, router, host, 15.0) >= 0, groups(stack)


def all_alive(stack: OvnStack) -> None:
    """Wait until the API reads every chassis alive."""
    for host in stack.spec.hosts:
        wait_alive(stack, host, True, DEAD_TIMEOUT_S)


def by_name(stack: OvnStack, silent: dict[str, float]) -> dict[str, float]:
    """Each router's longest silence by its name, rounded."""
    return {r["name"]: round(silent[r["gateway_ip"]], 1) for r in stack.routers}


def assert_moves_graceful(stack: OvnStack, moved: set[str], silent: dict[str, float]) -> None:
    """Each moved router dark for about one graceful move, below a crash failover. A router
    left on the chassis its neighbours left was seen to blip too (0.8 s; 8.8 s once on a
    loaded machine: OVN releasing ports on its chassis, l3ha wrote nothing to it): it is
    reported, and held only below a failover's limit."""
    for router in stack.routers:
        limit = CRASH_FAILOVER_S if router["id"] in moved else FAILOVER_LIMIT_S
        assert silent[router["gateway_ip"]] < limit, (router["name"], silent)


def primaries_per_host(stack: OvnStack) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {h: [] for h in stack.spec.hosts}
    for router in stack.routers:
        found.setdefault(stack.primary(router), []).append(router["name"])
    return found


# --- ``l3ha watch`` on the real stack (issue 19) ----------------------------------------
#: Neutron pings the chassis on agent listings at most every agent_down_time // 2 = 7 s, so a
#: live chassis' heartbeat moves about that often: dead after 18 s of none, seen twice.
STACK_WATCH = ("--interval", "1", "--dead-after", "18", "--report-interval", "8",
               "--dead-observations", "2", "--max-moves-per-cycle", "50")  # fmt: skip


@contextmanager
def watching(stack: OvnStack, state: Path, *extra: str) -> Iterator[Any]:
    """``l3ha watch`` on the stack (its clouds.yaml), ready; killed at the end."""
    from tests.watch.daemon_process import WatchProcess

    env = dict(os.environ, OS_CLIENT_CONFIG_FILE=str(stack.layout.root / "clouds.yaml"),
               OS_CLOUD=CLOUD_NAME)  # fmt: skip
    args = [*STACK_WATCH, "--state-dir", str(state), *extra]
    process = WatchProcess(state.parent, env, args, "watch")
    try:
        process.wait_event("ready", timeout=60)
        yield process
    finally:
        process.close()


@pytest.fixture
def watch(stack: OvnStack, tmp_path: Path) -> Iterator[Any]:
    with watching(stack, tmp_path / "state") as process:
        yield process


def moves_of(watch: Any) -> list[dict[str, object]]:
    return [e for e in watch.events("move") if e["outcome"] not in ("skipped",)]


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


# --- ``l3ha rolling`` over one gateway node (issue 19) -----------------------------------
_RUN = "from l3ha.cli.main import run; run()"
#: The gateway agent's heartbeat moves about every 7 s (see STACK_WATCH).
ROLLING = ("--stable-for", "10", "--dead-after", "18", "--report-interval", "8",
           "--poll-interval", "1", "-f", "json")  # fmt: skip
ROLLING_S = 240.0  # the pings' bound; they stop 3 s after the run ends
GRACEFUL_S = 2.5  # one graceful move: ~1 s; a crash failover is 3.5 s


class PrimarySampler:
    """Each router's primary read from the southbound every 0.5 s in a thread, while in
    the ``with`` block: (wall time, router name, host)."""

    def __init__(self, stack: OvnStack) -> None:
        self.stack = stack
        self.samples: list[tuple[float, str, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        deadline = time.monotonic() + 2 * ROLLING_S
        while not self._stop.wait(0.5) and time.monotonic() < deadline:
            for router in self.stack.routers:
                self.samples.append((time.time(), router["name"], self.stack.primary(router)))

    def __enter__(self) -> PrimarySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def on(self, host: str, after: float, before: float) -> set[str]:
        """Routers seen with ``host`` as their primary between the two moments."""
        return {name for at, name, seen in self.samples if after < at < before and seen == host}


def rolling(stack: OvnStack, state: Path, host: str) -> tuple[int, dict[str, Any], str]:
    """``l3ha rolling --hosts HOST`` whose maintenance command restarts the chassis'
    ovn-controller and Open vSwitch (``l3ha lab stack fault restart-agents --with-ovs``)."""
    fault_argv = [sys.executable, "-c", _RUN, "lab", "stack", "fault", "restart-agents",
                  "--with-ovs", "--dir", str(stack.layout.root)]  # fmt: skip
    argv = [sys.executable, "-c", _RUN, "rolling", "--hosts", host, "--run",
            shlex.join(fault_argv) + " {host}", "--state-dir", str(state), *ROLLING]  # fmt: skip
    env = dict(os.environ, OS_CLIENT_CONFIG_FILE=str(stack.layout.root / "clouds.yaml"),
               OS_CLOUD=CLOUD_NAME)  # fmt: skip
    child = subprocess.run(argv, env=env, text=True, capture_output=True, timeout=ROLLING_S,
                           check=False)  # fmt: skip
    start = child.stdout.find("{\n")
    return child.returncode, (json.loads(child.stdout[start:]) if start >= 0 else {}), child.stderr


def step_times(state: Path) -> dict[str, tuple[float, float]]:
    """The last rolling run's steps: phase -> (started, finished) as wall times."""
    from l3ha.operations.rolling.record import RollingRecord

    def wall(text: str | None) -> float:
        return datetime.fromisoformat(text).timestamp() if text else float("inf")

    with RollingRecord(state) as record:
        latest = record.latest_run()
        steps = record.steps(latest.id) if latest else []
    return {s.key.phase.value: (wall(s.started), wall(s.finished)) for s in steps}


def moves_per_router(state: Path, kinds: tuple[str, ...] = ()) -> list[Counter[str]]:
    """Per journalled operation (of ``kinds``, or any): how often each router moved."""
    with Journal(state) as journal:
        ops = [op for op in journal.history() if not kinds or op.kind in kinds]
        return [Counter(m.object_id for m in journal.moves(op.id) if m.outcome == "moved")
                for op in ops]  # fmt: skip


def planned_rebalance(
    stack: OvnStack, capsys: pytest.CaptureFixture[str], state: Path
) -> dict[str, Any]:
    """``l3ha rebalance --dry-run`` with l3ha's default weights and the journal in ``state``."""
    code, doc, err = l3ha(stack, capsys, "rebalance", "--dry-run", "--state-dir", str(state))
    assert code == 0, err
    return dict(doc)


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


# --- ``l3ha watch --auto-rebalance`` through a southbound restart (issue 19) -------------
NEUTRON_REACTS_S = 20.0  # Neutron re-handles every chassis 5-15 s after the southbound returns
REBALANCE_TIMEOUT_S = 120.0  # the watch's grace (30 s + 0.5 s a router) and its moves
GRACE_LEFT_S = 45.0  # past the grace, counted from the gates' resumption
GRACE_BASE_S = HealthPolicy().restart_grace_base  # plus 0.5 s a router: a lower bound


def at(event: dict[str, Any]) -> float:
    """An event's time stamp, as a wall time."""
    return datetime.fromisoformat(str(event["ts"])).timestamp()


def moves_while_halted(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The watch's moves logged between a ``halt`` and the next ``resumed``."""
    halted, found = False, []
    for event in events:
        if event["event"] in ("halt", "resumed"):
            halted = event["event"] == "halt"
        elif event["event"] == "move" and halted and event["outcome"] != "skipped":
            found.append(event)
    return found


def demoted(stack: OvnStack) -> list[str]:
    """Chassis at priority 0 in every router's group (Neutron's reaction to a SB restart)."""
    rows = groups(stack).values()
    return [h for h in stack.spec.hosts if all((h, 0) in [(n, p) for n, p, _ in r] for r in rows)]


def spread(stack: OvnStack) -> int:
    counts = [len(names) for names in primaries_per_host(stack).values()]
    return max(counts) - min(counts)


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
