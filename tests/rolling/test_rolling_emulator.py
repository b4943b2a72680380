"""``l3ha rolling`` against a real-time emulator: upgrades that go right, and the ones that don't.

Each maintenance command stops and starts the host's emulated agent through
``l3ha emulator fault``, as ``ssh HOST systemctl restart neutron-l3-agent``
would on a real node; the probe samples every router's data-plane address.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from .rolling_process import Rollout, rollout, wait_until

UPGRADE = 'l3ha emulator fault stop-agent "$HOST"\necho "upgrading $HOST"\nsleep 2\n' \
    'l3ha emulator fault start-agent "$HOST"'  # fmt: skip

#: A router's outage while it moves here (unbind, bind, the new agent wires it) is well
#: under a second; every legacy router is unreachable at most this long at a time.
ONE_MOVE_S = 1.5


def probe_summary(r: Rollout, run: int = 1) -> dict[str, object]:
    doc: dict[str, object] = json.loads(
        (r.state_dir / f"rolling-{run}" / "summary.json").read_text(encoding="utf-8")
    )
    return doc


def test_three_hosts_are_drained_upgraded_and_restored_in_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with rollout(tmp_path, monkeypatch) as r:
        before = {h: r.agent(h).started_at for h in ("net-1", "net-2", "net-3")}
        code, doc, err = r.run("--run", r.script("upgrade.sh", UPGRADE), "--rebalance-after")
        assert code == 0, err
        assert [h["status"] for h in doc["hosts"]] == ["done", "done", "done"]
        assert all(h["moved_out"] > 0 and h["moved_back"] > 0 for h in doc["hosts"])
        onto = sum(h["rebalanced_in"] for h in doc["hosts"])
        onto += sum(n for n in doc["rebalanced_elsewhere"].values() if n > 0)
        assert onto == doc["rebalance_moves"]  # each move credited to the host it moved onto
        steps = r.steps()
        assert {s.status.value for s in steps} == {"done"}
        order = [(s.key.host, s.key.phase.value) for s in sorted(steps, key=lambda s: s.started)]
        assert order == [(h, p) for h in ("net-1", "net-2", "net-3")
                         for p in ("drain", "run", "stable", "canary", "restore")]  # fmt: skip
        run_step = next(s for s in steps if s.key == steps[1].key)
        assert "upgrading net-1" in run_step.output
        for host in ("net-1", "net-2", "net-3"):
            agent = r.agent(host)
            assert agent.started_at != before[host]  # really restarted
            assert agent.admin_state_up and agent.description == ""
        snapshot = r.cloud.read_snapshot()
        assert all(snapshot.bindings_of_router(x.id) for x in snapshot.routers)  # none unhosted
        counts = [len(snapshot.bindings_of_agent(a.id)) for a in snapshot.agents]
        assert max(counts) - min(counts) <= 1, counts  # balanced
        assert r.emu.state()["unhosted"] == 0
        assert not [m for m in r.moves() if m["outcome"] in ("unhosted", "failed")]
        legacy = {x.id for x in snapshot.routers if not x.ha}
        summary = probe_summary(r)
        targets = summary["targets"]
        assert isinstance(targets, list) and len(targets) == 24
        for target in targets:
            if target["target"].removeprefix("tcp router-") in legacy:
                assert target["longest_outage_s"] <= ONE_MOVE_S, target


def test_a_failing_command_stops_the_run_and_resume_finishes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with rollout(tmp_path, monkeypatch) as r:
        fixed = tmp_path / "fixed"
        body = (f'if [ "$HOST" = net-2 ] && [ ! -e {fixed} ]; then\n'
                '  echo "E: unmet dependencies on $HOST" >&2; exit 3\nfi\n' + UPGRADE)  # fmt: skip
        command = r.script("upgrade.sh", body)
        code, doc, err = r.run("--run", command)
        assert code == 1, err
        assert "net-2: run: the command on net-2 exited with code 3" in doc["stopped"]
        assert [h["status"] for h in doc["hosts"]] == ["done", "stopped at run", "pending"]
        net2 = r.agent("net-2")
        assert net2.admin_state_up is False and r.routers_on("net-2") == []  # stays drained
        assert r.agent("net-3").admin_state_up is True
        failed = next(s for s in r.steps() if s.status.value == "failed")
        assert "unmet dependencies on net-2" in failed.output
        fixed.touch()
        code, doc, err = r.run("--resume")
        assert code == 0, err
        assert [h["status"] for h in doc["hosts"]] == ["done", "done", "done"]
        assert all(r.agent(h).admin_state_up for h in ("net-1", "net-2", "net-3"))
        attempts = {(s.key.host, s.key.phase.value): s.attempts for s in r.steps()}
        assert attempts[("net-1", "drain")] == 1 and attempts[("net-2", "run")] == 2


def test_an_agent_restarted_while_the_broker_is_down_stays_drained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with rollout(tmp_path, monkeypatch) as r:
        body = ('l3ha emulator fault stop-agent "$HOST"\n'
                "l3ha emulator fault broker-outage 120\n"
                'l3ha emulator fault start-agent "$HOST"')  # fmt: skip
        code, doc, err = r.run("--run", r.script("upgrade.sh", body), "--stable-timeout", "4")
        assert code == 1, err
        assert "net-1: stable l3: the agent on net-1 has not reported" in doc["stopped"]
        assert "message bus was down" in doc["stopped"]
        assert r.agent("net-1").admin_state_up is False and r.routers_on("net-1") == []
        assert [h["status"] for h in doc["hosts"]][1:] == ["pending", "pending"]
        assert r.agent("net-2").admin_state_up is True


def test_a_broken_data_plane_is_seen_by_the_probe_and_stops_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with rollout(tmp_path, monkeypatch) as r:
        body = UPGRADE + '\nl3ha emulator fault dataplane-fail "$HOST"'
        code, doc, err = r.run("--run", r.script("upgrade.sh", body), "--max-outage", "5")
        assert code == 1, err
        assert doc["stopped"].startswith("net-1: canary l3: canary router")
        assert "data-plane address does not answer" in doc["stopped"]
        assert r.agent("net-1").admin_state_up is False and r.routers_on("net-1") == []
        assert [h["status"] for h in doc["hosts"]][1:] == ["pending", "pending"]
        assert r.routers_on("net-2")  # the next host was never drained


def test_an_outage_longer_than_max_outage_stops_the_run_before_the_next_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with rollout(tmp_path, monkeypatch) as r:
        body = ('if [ "$HOST" = net-1 ]; then  # the upgrade cuts another node for a while\n'
                "  l3ha emulator fault dataplane-fail net-3; sleep 3\n"
                "  l3ha emulator fault revive-agent net-3\nfi\n" + UPGRADE)  # fmt: skip
        code, doc, err = r.run("--run", r.script("upgrade.sh", body), "--max-outage", "1")
        assert code == 1, err
        assert [h["status"] for h in doc["hosts"]] == ["done", "pending", "pending"]
        assert "longer than --max-outage 1 s: not starting net-2" in doc["stopped"]
        assert doc["longest_outage_s"] > 1
        assert r.agent("net-2").admin_state_up is True and r.routers_on("net-2")


def test_kill_9_mid_run_then_resume_moves_no_router_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with rollout(tmp_path, monkeypatch) as r:
        command = r.script("upgrade.sh", UPGRADE)
        child = r.start("--run", command, "--rate", "4", "--concurrency", "1")

        def draining_net2() -> bool:
            assert child.poll() is None, child.communicate()
            return any(s.key.host == "net-2" and s.key.phase.value == "drain"
                       and s.status.value == "running" for s in r.steps())  # fmt: skip

        wait_until(draining_net2, 120, "net-2's drain")
        wait_until(
            lambda: any(
                m["step"] == "verified"
                for m in r.moves()
                if m["source_id"] == r.emu.agent_ids_by_host()["net-2"]
            ),
            30,
            "a move",
        )
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=10)
        code, doc, err = r.run("--run", command, "--resume")
        assert code == 0, (err, doc.get("stopped"))
        assert [h["status"] for h in doc["hosts"]] == ["done", "done", "done"]
        # Every drain (the killed one, its recovery and its second attempt together) moves
        # each router off the drained host once. (A router may move off a host again later
        # for a good reason: a canary taking it back to the host it was drained from.)
        moved = Counter(
            (m["router_id"], m["source_id"])
            for m in r.moves()
            if m["kind"] == "drain"
            and m["outcome"] in ("moved", "pending")
            and m["move"] != "add_replica"
        )
        assert moved and max(moved.values()) == 1, moved.most_common(3)
        net2 = r.emu.agent_ids_by_host()["net-2"]
        assert any(m["status"] == "recovered" and m["source_id"] == net2 for m in r.moves())
        drain2 = next(
            s for s in r.steps() if s.key.host == "net-2" and s.key.phase.value == "drain"
        )
        assert drain2.attempts == 2


def test_resume_never_runs_a_command_twice_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from l3ha.operations.rolling.command import group_alive

    with rollout(tmp_path, monkeypatch) as r:
        # The upgrade holds until the test releases it (at most 120 s), so the killed run's
        # command is still running when the first resume looks, however loaded the machine.
        release, log = tmp_path / "release", tmp_path / "commands.log"
        hold = f'echo "start $HOST" >> "{log}"\n' \
            f'for i in $(seq 1200); do [ -e "{release}" ] && break; sleep 0.1; done\n'  # fmt: skip
        body = hold + UPGRADE.replace("sleep 2\n", "") + f'\necho "end $HOST" >> "{log}"'
        command = r.script("upgrade.sh", body)
        child = r.start("--run", command)

        def running() -> bool:
            assert child.poll() is None, child.communicate()
            return any(s.key.phase.value == "run" and s.status.value == "running"
                       and "pgid" in s.detail for s in r.steps())  # fmt: skip

        wait_until(running, 60, "net-1's command")
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=10)
        code, doc, err = r.run("--resume")  # the killed run's upgrade still runs
        assert code == 1, err
        assert "is still running; let it end, then resume" in doc["stopped"]
        pgid = next(s.detail["pgid"] for s in r.steps() if s.key.phase.value == "run")
        assert group_alive(pgid)
        release.touch()
        wait_until(lambda: not group_alive(pgid), 60, "the first upgrade to end")
        code, doc, err = r.run("--resume")
        assert code == 0, err
        assert [h["status"] for h in doc["hosts"]] == ["done", "done", "done"]
        lines = log.read_text().split("\n")[:-1]
        hosts = ["net-1", "net-1", "net-2", "net-3"]  # net-1's again: the killed attempt's
        assert lines == [f"{edge} {h}" for h in hosts for edge in ("start", "end")], lines


def test_pause_waits_for_the_operator_and_a_stop_keeps_the_host_drained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with rollout(tmp_path, monkeypatch) as r:
        code, doc, err = r.run("--hosts", "net-1,net-2", "--pause", answers="")  # end of input
        assert code == 1, err
        assert doc["stopped"] == "net-1: pause: the operator stopped the run with net-1 drained"
        assert "net-1 is drained: do its maintenance, then answer 'continue'" in err
        assert r.agent("net-1").admin_state_up is False and r.routers_on("net-1") == []
        assert r.agent("net-2").admin_state_up is True
        code, doc, err = r.run("--hosts", "net-1,net-2", "--resume", answers="what?\ncontinue\nc\n")
        assert code == 0, err
        assert "answer 'continue' or 'stop', not 'what?'" in err
        assert [h["status"] for h in doc["hosts"]] == ["done", "done"]
        assert all(r.agent(h).admin_state_up for h in ("net-1", "net-2"))
        pause = [s for s in r.steps() if s.key.phase.value == "pause"]
        assert [(s.key.host, s.attempts) for s in pause] == [("net-1", 2), ("net-2", 1)]


def test_no_run_rehearses_drain_proof_and_restore_without_a_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with rollout(tmp_path, monkeypatch) as r:
        port = str(r.emu.state()["dataplane_port"])
        argv = [a for a in r.command() if a not in ("--probe-routers", f"tcp:{port}")]
        child = subprocess.run([*argv, "--hosts", "net-1", "--no-run"], env=r.env, text=True,
                               capture_output=True, timeout=180, check=False)  # fmt: skip
        assert child.returncode == 0, child.stderr
        assert re.search(r"\| net-1 +\| done +\|", child.stdout) and "n/a" in child.stdout
        assert "longest outage: n/a (no probe ran)" in child.stdout
        phases = [s.key.label for s in r.steps()]
        assert phases == ["drain l3", "stable l3", "canary l3", "restore l3"]
        assert r.agent("net-1").admin_state_up and r.routers_on("net-1")


def test_a_reader_of_stderr_going_away_does_not_stop_the_run_half_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with rollout(tmp_path, monkeypatch) as r:
        child = subprocess.Popen([*r.command(), "--hosts", "net-1", "--no-run"], env=r.env,
                                 text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 stdin=subprocess.DEVNULL)  # fmt: skip
        assert child.stderr is not None
        child.stderr.close()  # '2>&1 | head': the progress lines have nowhere to go
        out, _ = child.communicate(timeout=180)
        assert child.returncode == 0, out
        assert re.search(r"\| net-1 +\| done +\|", out), out
        assert r.agent("net-1").admin_state_up and r.routers_on("net-1")
        assert {s.status.value for s in r.steps()} == {"done"}
