"""Failover on the real data plane: cut the master node's link, one other node takes the VIP.

"Real holder" for a node whose link is cut: it cannot hear the others, so its
keepalived stays master and keeps the VIP in its isolated namespace (that is
what a partitioned Neutron node does). So the takeover is judged on the
reachable nodes (exactly one of them holds the VIP) and the failed node's
monitor must agree with its own namespace (it still says master). The ICMP
outage is measured by ``l3ha probe`` from the client namespace.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.lab.conftest import (
    Holders,
    LabFactory,
    needs_lab,
    reported,
    wait_consistent,
    wait_until,
)
from tests.lab.probe_run import ClientProbe

from l3ha.hastate.statefile import read_transition
from l3ha.lab.lab import Lab

pytestmark = [*needs_lab, pytest.mark.slow]

ADVERT = 0.1
# The takeover bound is VRRPv3's master-down interval of the backup that takes
# over, 3 x advert + (256 - priority) x advert / 256, read from the lab's
# topology (``takeover_bound``), plus this observation tolerance: the holder is
# polled every 5 ms (``wait_until``) and each poll dumps the addresses of two
# namespaces, so a takeover is seen up to one poll late; on a loaded machine one
# such poll (two subprocesses) can take over 50 ms.
OBSERVATION_TOLERANCE = 0.15
MAX_OUTAGE = 0.5


def takeover_bound(lab: Lab, router: str, backups: list[str]) -> float:
    """Master-down interval of the highest-priority backup (it takes over first) + tolerance."""
    taker = max(backups, key=lambda n: lab.spec.priority(router, n))
    return lab.spec.master_down_interval(router, taker) + OBSERVATION_TOLERANCE


def test_failover_of_the_master_node(
    make_lab: LabFactory, holders_of: Callable[[Lab], Holders], tmp_path: Path
) -> None:
    lab = make_lab(nodes=3, routers=2, advert_int=ADVERT)
    holders = holders_of(lab)
    for router in lab.spec.router_names:
        wait_consistent(lab, holders, router)
    (master,) = holders.of("r1")
    others = [n for n in lab.spec.node_names if n != master]
    bound = takeover_bound(lab, "r1", others)
    probe = ClientProbe(lab, lab.spec.vip("r1").split("/")[0], tmp_path / "probe")
    try:
        probe.wait_sampling()
        cut_at = time.monotonic()
        lab.fail(master)
        took = wait_until("one reachable holder", lambda: len(holders.of("r1", others)) == 1, 5)
        for router in lab.spec.router_names:
            wait_consistent(lab, holders, router)
        # Both backups may time out within a few ms of each other and the lower one
        # yield again, so the settled holder, not the first one seen, is the new master.
        (new_master,) = holders.of("r1", others)
        time.sleep(0.3)
        outage = probe.stop()
    finally:
        probe.kill()

    seen_by_monitor = read_transition(lab.monitor_state("r1", new_master))
    assert seen_by_monitor is not None and seen_by_monitor.state.value == "master"
    monitor_took = seen_by_monitor.monotonic - cut_at
    print(
        f"\nfailover advert {ADVERT}s: holder polled {took:.3f}s, monitor {monitor_took:.3f}s, "
        f"ICMP longest outage {outage['longest_outage_s']:.3f}s "
        f"({outage['outage_count']} outages, {outage['samples']} samples), bound {bound:.3f}s"
    )
    assert took < bound
    assert 0 < monitor_took < bound
    # reachable nodes: exactly one holder, and every monitor agrees with its namespace
    assert holders.of("r1", others) == [new_master]
    assert [reported(lab, "r1", n) for n in others].count("master") == 1
    # the cut-off node keeps the VIP in its isolated namespace and its monitor says so
    assert master in holders.of("r1")
    assert reported(lab, "r1", master) == "master"
    assert outage["longest_outage_s"] < MAX_OUTAGE, outage


def test_recovered_node_yields_or_keeps_one_holder(
    make_lab: LabFactory, holders_of: Callable[[Lab], Holders]
) -> None:
    lab = make_lab(nodes=2, routers=1, advert_int=ADVERT)
    holders = holders_of(lab)
    (master,) = holders.of("r1")
    lab.fail(master)
    wait_until("both hold (partition)", lambda: len(holders.of("r1")) == 2, 5)
    wait_consistent(lab, holders, "r1")
    lab.recover(master)
    wait_until("one holder again", lambda: len(holders.of("r1")) == 1, 5)
    wait_consistent(lab, holders, "r1")
    assert [reported(lab, "r1", n) for n in lab.spec.node_names].count("master") == 1
