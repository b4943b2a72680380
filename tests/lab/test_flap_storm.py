"""Flap storm: nodes cut and restored faster than the VRRP takeover time, 20 rounds.

The takeover time is VRRPv3's master-down interval (3 x advert + skew), the
shortest of any node (the highest priority), read from the lab's topology;
every cut lasts 0.2-0.9 of it, so no single cut outlasts a takeover (takeovers
still happen when cuts follow each other before an advert gets through).
Checks: at every settled moment, every second round, the monitors' reports
equal the namespaces (never two monitors saying master while one node holds
the VIP); state files never go backwards; socket consumers never see an old
transition; hooks never run two at once for one monitor, never out of order,
and the last one run is for the final transition.
"""

from __future__ import annotations

import itertools
import random
import threading
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

from l3ha.hastate.consumer import Received, SocketWatcher
from l3ha.hastate.statefile import read_transition
from l3ha.lab.lab import Lab

pytestmark = [*needs_lab, pytest.mark.slow]

ADVERT = 0.1
ROUNDS = 20
SETTLE_EVERY = 2
CUT_SHARE = (0.2, 0.9)  # of the shortest master-down interval
PAUSE_SHARE = (0.0, 0.5)

HOOK = """#!/bin/sh
f="{dir}/hook-${{L3HA_NETNS##*-}}.log"
echo "start $2 $1" >> "$f"
sleep 0.03
echo "end $2 $1" >> "$f"
"""


class StateFileSampler:
    """Reads every monitor's state file in a loop, recording the sequence numbers seen."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files
        self.seen: dict[str, list[int]] = {k: [] for k in files}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for key, path in self.files.items():
                found = read_transition(path)
                if found is not None:
                    self.seen[key].append(found.seq)
            time.sleep(0.002)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


class Consumer:
    """A SocketWatcher on one monitor, collecting in a thread."""

    def __init__(self, path: Path) -> None:
        self.watcher = SocketWatcher(path, retries=5, retry_interval=0.05)
        self.got: list[Received] = []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for received in self.watcher.transitions():
                self.got.append(received)
        except Exception:  # the socket goes away at teardown
            return


def hook_log(lines: list[str]) -> tuple[list[str], list[int]]:
    marks = [line.split()[0] for line in lines]
    starts = [int(line.split()[1]) for line in lines if line.startswith("start")]
    return marks, starts


def test_flap_storm(
    make_lab: LabFactory, holders_of: Callable[[Lab], Holders], tmp_path: Path
) -> None:
    hooks_dir = tmp_path / "hooks"
    hooks_dir.mkdir()
    script = tmp_path / "hook.sh"
    script.write_text(HOOK.format(dir=hooks_dir))
    script.chmod(0o755)
    lab = make_lab(nodes=3, routers=1, advert_int=ADVERT, hook=str(script))
    holders = holders_of(lab)
    nodes = lab.spec.node_names
    takeover = min(lab.spec.master_down_interval("r1", n) for n in nodes)
    sampler = StateFileSampler({n: lab.monitor_state("r1", n) for n in nodes})
    consumers = {n: Consumer(lab.monitor_socket("r1", n)) for n in nodes}
    rng = random.Random(4)
    settled_checks = 0
    try:
        for round_no in range(1, ROUNDS + 1):
            reachable = [n for n in nodes if n not in lab.record.cut]
            current = holders.of("r1", reachable)
            victim = current[0] if current and rng.random() < 0.6 else rng.choice(nodes)
            lab.fail(victim)
            time.sleep(rng.uniform(*CUT_SHARE) * takeover)
            lab.recover(victim)
            time.sleep(rng.uniform(*PAUSE_SHARE) * takeover)
            if round_no % SETTLE_EVERY == 0:
                wait_until("one holder", lambda: len(holders.of("r1")) == 1, 5)
                wait_consistent(lab, holders, "r1")
                truth = holders.of("r1")
                masters = [n for n in nodes if reported(lab, "r1", n) == "master"]
                assert masters == truth and len(truth) == 1, (round_no, masters, truth)
                settled_checks += 1
        final = {n: read_transition(lab.monitor_state("r1", n)) for n in nodes}

        def hooks_caught_up() -> bool:
            for node, t in final.items():
                log = hooks_dir / f"hook-{node}.log"
                if t is None or not log.exists():
                    return False
                if log.read_text().splitlines()[-1] != f"end {t.seq} {t.state.value}":
                    return False
            return True

        wait_until("hooks for the final transitions", hooks_caught_up, 10)
    finally:
        sampler.stop()

    assert settled_checks == ROUNDS // SETTLE_EVERY
    total = sum(check_outputs(node, sampler, consumers[node], hooks_dir) for node in nodes)
    print(f"\nflap storm: {ROUNDS} rounds, {total} transitions over {len(nodes)} monitors")
    assert total > len(nodes)  # the storm really moved the VIP


def check_outputs(node: str, sampler: StateFileSampler, consumer: Consumer, hooks: Path) -> int:
    """One monitor's state file, socket stream and hooks were all in order; its transitions."""
    seqs = sampler.seen[node]
    assert seqs == sorted(seqs), f"{node}: state file went backwards"
    got = consumer.got
    states = [r.transition.state for r in got]
    assert all(a != b for a, b in itertools.pairwise(states)), node
    seen = [r.transition.seq for r in got]
    assert seen == list(range(seen[0], seen[0] + len(seen))), f"{node}: missed or reordered"
    assert consumer.watcher.dropped == 0
    marks, starts = hook_log((hooks / f"hook-{node}.log").read_text().splitlines())
    assert marks == ["start", "end"] * (len(marks) // 2), f"{node}: overlapping hooks"
    assert starts == sorted(set(starts)), f"{node}: hooks out of order"
    return len(got)
