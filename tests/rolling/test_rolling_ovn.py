"""``l3ha rolling`` on ML2/OVN: the hosts' gateway chassis drained, upgraded and restored.

A real-time emulator in OVN mode (3 gateway chassis, 6 routers); the maintenance command
kills and revives the host's chassis through ``l3ha emulator fault``, as a reboot would.
The chassis is drained first (its primaries moved gracefully, it at the bottom of every
group), so the crash fails nothing over and its return fails nothing back; restore is the
undrain with its rebalance. L3-agent-only options are one line, exit 2.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from l3ha.cloud.adapter import connect
from l3ha.cloud.ovn import NeutronOvn
from l3ha.emulator.ovn_world import MoveKind
from l3ha.journal import Journal
from l3ha.operations.ovn import drained_chassis

from .rolling_process import rollout, wait_until

OVN = {"ovn": True, "ovn_chassis": 3, "routers": 6, "ha_routers": 0,
       "dataplane_listeners": 0}  # fmt: skip
REBOOT = (
    'l3ha emulator fault kill-chassis "$HOST"\necho "rebooting $HOST"\nsleep 1\n'
    'l3ha emulator fault revive-chassis "$HOST"'
)


def _rolling(env: dict[str, str], *args: str) -> tuple[int, dict[str, Any], str]:
    command = [sys.executable, "-c", "from l3ha.cli.main import run; run()", "rolling",
               "--stable-for", "2", "--dead-after", "3", "--report-interval", "1",
               "--poll-interval", "0.2", "--canary-timeout", "10", "-f", "json", *args]  # fmt: skip
    child = subprocess.run(
        command, check=False, env=env, text=True, capture_output=True, timeout=180
    )
    start = child.stdout.find("{\n")
    doc = json.loads(child.stdout[start:]) if start >= 0 else {}
    return child.returncode, doc, child.stderr


def test_two_gateway_chassis_are_drained_rebooted_and_restored_without_a_failover(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with rollout(tmp_path, monkeypatch, **OVN) as r:
        code, doc, err = _rolling(r.env, "--hosts", "gw-1,gw-2", "--run",
                                  r.script("reboot.sh", REBOOT))  # fmt: skip
        assert code == 0, err
        assert [h["status"] for h in doc["hosts"]] == ["done", "done"]
        steps = sorted(r.steps(), key=lambda s: s.started)
        order = [(s.key.host, s.key.phase.value) for s in steps]
        assert order == [(h, p) for h in ("gw-1", "gw-2")
                         for p in ("drain", "run", "stable", "canary", "restore")]  # fmt: skip
        assert r.emu.ovn is not None
        gateways = r.emu.ovn.ovn.gateways.values()
        kinds = Counter(o.kind for g in gateways for o in g.outages)
        assert kinds[MoveKind.FAILOVER] == 0 and kinds[MoveKind.FAILBACK] == 0, kinds
        assert kinds[MoveKind.GRACEFUL] > 0  # primaries did move, gracefully
        wait_until(lambda: all(g.forwarding and g.bound for g in gateways), 5.0,
                   "the last graceful moves to end")  # fmt: skip
        ovn = NeutronOvn(connect())
        world = ovn.read_ovn_snapshot()
        primaries = Counter(world.primary(x.id) for x in world.routers)
        hosts = {c.id: c.host for c in world.chassis}
        assert sorted(primaries.values()) == [2, 2, 2], {hosts[c]: n for c, n in primaries.items()}
        with Journal(r.state_dir) as journal:
            assert drained_chassis(journal, world.chassis) == frozenset()  # both undrained
            per_op = [Counter(m.object_id for m in journal.moves(op.id))
                      for op in journal.history()]  # fmt: skip
        assert all(n == 1 for moved in per_op for n in moved.values())  # once per operation
        drains_and_returns = 2 * 2  # a router moves at most once off and once onto each host
        per_router = Counter(g.router_id for g in gateways for o in g.outages
                             if o.kind is MoveKind.GRACEFUL)  # fmt: skip
        assert max(per_router.values()) <= drains_and_returns


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--hosts", "gw-9", "--no-run"), "gw-9"),
        (("--hosts", "gw-1", "--no-run", "--rebalance-after"), "--rebalance-after is for L3"),
        (("--hosts", "gw-1", "--no-run", "--canary", "r"), "--canary is for L3 agents"),
    ],
)
def test_bad_input_on_ml2_ovn_is_one_line_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], words: str
) -> None:
    with rollout(tmp_path, monkeypatch, **OVN) as r:
        code, _, err = _rolling(r.env, *args)
        assert code == 2, err
        assert err.count("\n") == 1 and words in err, err
        assert not (r.state_dir / "rolling.db").exists() or not r.steps()
