"""Failover in the keepalived lab: takeover time and ICMP outage per cut of the master node.

I/O: needs root and keepalived; builds a lab (namespaces ``l3ha-lab-bench*``)
with its state in a temporary directory, runs ``l3ha probe --icmp`` in the
client namespace, and always tears the lab down. Prints a table.

Each round cuts the link of router r1's master, measures (a) the time until
exactly one reachable node holds the VIP (polled over netlink every ~5 ms),
(b) the time the new master's ``l3ha ha monitor`` stamped on its transition
(kernel event; same monotonic clock), and (c) the ICMP outage seen from the
client (10 ms samples); then restores the link and lets the lab settle.

    .venv/bin/python bench/bench_lab_failover.py --advert-int 0.1 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from l3ha.hastate.netlink import AddressReader
from l3ha.hastate.statefile import read_transition
from l3ha.lab.lab import Lab, lab_up, teardown
from l3ha.lab.topology import CLIENT, DEVICE, LabSpec


def holders(readers: dict[str, AddressReader], vip: str, nodes: list[str]) -> list[str]:
    return [n for n in nodes if vip in readers[n].addresses()]


def start_probe(lab: Lab, vip: str, out: Path) -> subprocess.Popen[bytes]:
    argv = ["ip", "netns", "exec", lab.spec.namespace(CLIENT), sys.executable, "-m"]
    argv += ["l3ha.cli.main", "probe", "--icmp", vip, "--interval", "0.01", "--timeout", "0.2"]
    argv += ["--output", str(out), "-f", "json"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    samples = out / "samples.jsonl"
    deadline = time.monotonic() + 60
    while not (samples.exists() and len(samples.read_text().splitlines()) > 50):
        if time.monotonic() > deadline or proc.poll() is not None:
            raise SystemExit("probe did not start")
        time.sleep(0.1)
    return proc


def one_round(
    lab: Lab, readers: dict[str, AddressReader], vip: str, recover_wait: float
) -> dict[str, Any]:
    nodes = lab.spec.node_names
    (master,) = holders(readers, vip, nodes)
    others = [n for n in nodes if n != master]
    cut_at, cut_wall = time.monotonic(), time.time()
    lab.fail(master)
    while len(holders(readers, vip, others)) != 1:
        if time.monotonic() - cut_at > 30:
            raise SystemExit("no takeover within 30 s")
        time.sleep(0.005)
    polled = time.monotonic() - cut_at
    (new,) = holders(readers, vip, others)
    time.sleep(1 + 4 * lab.spec.advert_int)
    seen = read_transition(lab.monitor_state("r1", new))
    recover_wall = time.time()
    lab.recover(master)
    time.sleep(recover_wait + 4 * lab.spec.advert_int)
    return {
        "failed": master,
        "new": new,
        "polled_s": polled,
        "monitor_s": (seen.monotonic - cut_at) if seen else float("nan"),
        "cut_wall": cut_wall,
        "recover_wall": recover_wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--advert-int", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--no-heal-garp", dest="heal_garp", action="store_false")
    parser.add_argument("--recover-wait", type=float, default=2.5, help="seconds after recovery")
    args = parser.parse_args()
    spec = LabSpec("bench", args.nodes, 1, args.advert_int, args.heal_garp)
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "lab"
        try:
            lab = lab_up(spec, state)
            readers = {n: AddressReader(spec.namespace(n), DEVICE) for n in spec.node_names}
            vip = spec.vip("r1").split("/")[0]
            probe = start_probe(lab, vip, Path(tmp) / "probe")
            rounds = [one_round(lab, readers, vip, args.recover_wait) for _ in range(args.rounds)]
            probe.send_signal(signal.SIGINT)
            probe.wait(60)
            summary = json.loads((Path(tmp) / "probe" / "summary.json").read_text())
        finally:
            teardown(spec.name, state)
    report(args, rounds, summary["targets"][0]["outages"])


def attribute(
    rounds: list[dict[str, Any]], outages: list[dict[str, Any]]
) -> dict[str, list[float]]:
    """Each outage belongs to the latest cut or recover that happened before it started."""
    events = sorted(
        [(r["cut_wall"], "cut") for r in rounds] + [(r["recover_wall"], "recover") for r in rounds]
    )
    found: dict[str, list[float]] = {"cut": [], "recover": []}
    for outage in outages:
        before = [kind for wall, kind in events if wall <= outage["start_wall"] + 0.05]
        found[before[-1] if before else "cut"].append(outage["duration_s"])
    return found


def report(args: argparse.Namespace, rounds: list[dict[str, Any]], outages: list[Any]) -> None:
    garp = "heal GARP" if args.heal_garp else "no heal GARP (Neutron's template)"
    print(f"advert_int {args.advert_int} s, {args.nodes} nodes, VRRPv3, {garp}, master link cut")
    print(f"{'round':>5} {'failed':>6} {'new':>4} {'takeover_s':>10} {'monitor_s':>9}")
    for i, r in enumerate(rounds, 1):
        print(
            f"{i:>5} {r['failed']:>6} {r['new']:>4} {r['polled_s']:>10.3f} {r['monitor_s']:>9.3f}"
        )
    polled = [r["polled_s"] for r in rounds]
    print(f"takeover median {statistics.median(polled):.3f} s, max {max(polled):.3f} s")
    for kind, durations in attribute(rounds, outages).items():
        shown = ", ".join(f"{d:.3f}" for d in durations) or "none"
        print(f"ICMP outages after {kind} (client, 10 ms samples): {shown} s")


if __name__ == "__main__":
    main()
