"""Real faults on a real stack: the RabbitMQ incident and a node death, l3ha beside Neutron.

One stack (3 nodes, 6 routers, agent_down_time 15 s, report_interval 5 s) serves
the module; each router's reachability from its VM is pinged every 0.2 s. Before
each test the stack is healed (nodes revived, routers hosted, every VM answered)
so that it starts from a healthy cloud; the node death runs last and kills the
node with the most routers. Figures are printed (``-s``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.realstack.conftest import bring_up, needs_stack

from l3ha.lab.stack.processes import wait_for
from l3ha.lab.stack.reach import Pingers, Reach
from l3ha.lab.stack.scenario import Watch, heal
from l3ha.lab.stack.spec import StackSpec
from l3ha.lab.stack.stack import Stack
from l3ha.lab.stack.topology import (
    ports_active_on,
    router_hosts,
    unanswered,
    wait_for_agents,
)

pytestmark = needs_stack

SPEC = StackSpec(nodes=3, routers=6, report_interval=5, agent_down_time=15)
OUTAGE_S = 2 * SPEC.agent_down_time + 2  # the incident needs more than 2 x agent_down_time
LATE_HOST, LATE_BY_S = "l3rs-n3", 8.0
#: The longest outage a rolling upgrade of one node has caused here (see its test).
ROLLING_DARK_BOUND_S = 30.0


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from bring_up(tmp_path_factory.mktemp("realstack") / "st", SPEC)


@pytest.fixture(autouse=True)
def healed(stack: Stack) -> None:
    """Each test starts from a healed cloud. Healed before, not after: the node death
    runs last, and its node is left dead for the module's teardown (reviving it and
    waiting for its agents took about 30 s)."""
    heal(stack)


def report(title: str, reach: dict[str, Reach], since: float) -> None:
    print(f"\n{title}")
    for name, r in sorted(reach.items()):
        back = r.back_after(since)
        again = "-" if back is None else f"{back:5.1f} s"
        print(f"  {name}: dark {r.dark_seconds:5.1f} s, longest {r.longest:5.1f} s, "
              f"answers again {again} after the fault")  # fmt: skip


def outage_then_recovery(stack: Stack) -> float:
    """The incident: broker down OUTAGE_S, one node's agents reconnect late; then settle
    (Neutron's moved routers are wired within it)."""
    began = time.time()
    stack.broker_outage(OUTAGE_S, late_host=LATE_HOST, late_by=LATE_BY_S)
    wait_for_agents(stack.api, stack.spec, 120)
    time.sleep(stack.spec.agent_down_time + 5)
    return began


@pytest.mark.timeout(400)
def test_broker_outage_l3ha_moves_nothing_and_routers_keep_forwarding(
    stack: Stack, tmp_path: Path
) -> None:
    routers = stack.state.data["routers"]
    before = router_hosts(stack.api, routers)
    pingers = Pingers(stack.spec, tmp_path / "ping").start()
    watch = Watch(stack, tmp_path)
    try:
        time.sleep(5)
        began = time.time()
        stack.broker_outage(OUTAGE_S, late_host=LATE_HOST, late_by=LATE_BY_S)
        wait_for_agents(stack.api, stack.spec, 120)
        # Until the watch acts again with every agent judged alive (about when Neutron sees
        # the late node's agents again: its recovery grace is agent_down_time), then a
        # report interval more: a move it would make comes at once. No fixed 20 s.
        wait_for("l3ha watch to resume with every agent alive",
                 lambda: watch.resumed(stack.spec.hosts), 120, 0.5)  # fmt: skip
        time.sleep(stack.spec.report_interval)
    finally:
        log = watch.stop()
        reach = pingers.stop()
    report("broker outage, l3ha watch running", reach, began)
    assert watch.process.returncode == 0, log[-2000:]
    assert router_hosts(stack.api, routers) == before
    assert all(r.longest < 2.0 for r in reach.values()), reach


@pytest.mark.timeout(400)
def test_broker_outage_with_neutron_failover_is_measured(stack: Stack, tmp_path: Path) -> None:
    routers = stack.state.data["routers"]
    before = router_hosts(stack.api, routers)
    stack.start_neutron_failover()
    pingers = Pingers(stack.spec, tmp_path / "ping").start()
    try:
        time.sleep(5)  # its first pass comes 7-14 s after start: within the outage
        began = outage_then_recovery(stack)
    finally:
        reach = pingers.stop()
        stack.stop_neutron_failover()
    after = router_hosts(stack.api, routers)
    moved = sorted(name for name in routers if after[name] != before[name])
    dark = sorted(name for name, r in reach.items() if r.longest >= 2.0)
    report(f"broker outage, Neutron's failover: moved {len(moved)} {moved}, "
           f"dark {len(dark)} {dark}", reach, began)  # fmt: skip
    assert set(dark) <= set(moved), "a router that Neutron did not move went dark"


@pytest.mark.timeout(400)
def test_rolling_upgrade_of_one_node_keeps_every_router_within_one_move(
    stack: Stack, tmp_path: Path
) -> None:
    l3ha = str(Path(sys.executable).parent / "l3ha")
    host = "l3rs-n2"
    upgrade = f"{l3ha} lab stack fault restart-agents {{host}} --with-ovs --dir {stack.layout.root}"
    argv, env = stack.watch_command(tmp_path / "state")
    rolling = [l3ha, "rolling", "--hosts", host, "--run", upgrade, "--stable-for", "10",
               "--dead-after", str(stack.spec.agent_down_time), "--report-interval",
               str(stack.spec.report_interval), "--canary-timeout", "60",
               "--os-cloud", argv[argv.index("--os-cloud") + 1],
               "--state-dir", str(tmp_path / "state"), "-f", "json"]  # fmt: skip
    pingers = Pingers(stack.spec, tmp_path / "ping").start()
    began = time.time()
    try:
        result = subprocess.run(rolling, capture_output=True, text=True, timeout=300,
                                env={**os.environ, **env}, check=False)  # fmt: skip
        # Rolling returns once the restored routers' ports are ACTIVE; on the loaded machine
        # a router moved back was seen still dark then (its window is measured to the end).
        if result.returncode == 0:
            wait_for("every VM to reach its router after the upgrade",
                     lambda: not unanswered(stack.spec), ROLLING_DARK_BOUND_S, 1)  # fmt: skip
    finally:
        reach = pingers.stop()
    report(f"rolling upgrade of {host} (agents and ovs-vswitchd restarted)", reach, began)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert unanswered(stack.spec) == []
    hosts = router_hosts(stack.api, stack.state.data["routers"])
    assert all(len(h) == 1 for h in hosts.values()), hosts
    # The goal is one move (about 12 s here); measured so far: at most 9 s in two runs of three,
    # but 23 s once for the router that went back onto the just-restarted node (issue 20:
    # open; docs/realstack.md). Bound what holds today, so a worse regression still fails.
    assert all(r.longest < ROLLING_DARK_BOUND_S for r in reach.values()), reach


@pytest.mark.timeout(400)
def test_node_death_l3ha_evacuates_every_router_to_live_agents(
    stack: Stack, tmp_path: Path
) -> None:
    routers = stack.state.data["routers"]
    placed = router_hosts(stack.api, routers)
    victim = busiest(stack.spec.hosts, placed)
    on_victim = [n for n, hosts in placed.items() if victim in hosts]
    assert on_victim
    pingers = Pingers(stack.spec, tmp_path / "ping").start()
    watch = Watch(stack, tmp_path)
    try:
        time.sleep(3)
        killed = time.time()
        stack.kill_node(victim)
        wait_for("every VM to reach its router again", lambda: not unanswered(stack.spec), 120, 1)
        answered = time.time() - killed
        wait_for("the moved routers' ports ACTIVE on their new hosts",
                 lambda: all_ports_active(stack, routers), 60, 1)  # fmt: skip
    finally:
        log = watch.stop()
        reach = pingers.stop()
    report(f"node death ({victim}), l3ha watch; all answered {answered:.1f} s after", reach, killed)
    hosts = router_hosts(stack.api, routers)
    assert all(len(h) == 1 and h[0] != victim for h in hosts.values()), hosts
    assert unanswered(stack.spec) == []
    for name in on_victim:
        assert reach[name].back_after(killed) is not None, f"{name} was never dark"
    assert answered < 90, log[-2000:]


def busiest(hosts: tuple[str, ...], placed: dict[str, list[str]]) -> str:
    """The host with the most routers (the first of them on a tie): the earlier scenarios
    (Neutron's failover, the rolling upgrade) leave the routers where they moved them."""
    return max(hosts, key=lambda host: sum(host in on for on in placed.values()))


def all_ports_active(stack: Stack, routers: dict[str, str]) -> bool:
    hosts = router_hosts(stack.api, routers)
    return all(
        len(hosts[name]) == 1 and ports_active_on(stack.api, rid, hosts[name][0])
        for name, rid in routers.items()
    )
