"""``l3ha watch`` as an operator meets it: --once, --dry-run, SIGHUP, metrics, systemd
notifications, the status ``l3ha check`` reads, and one-line errors for bad input."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.daemon.etcd_server import free_port
from tests.watch.daemon_process import DEAD_AFTER, FAST_WATCH, Scene, changed, scene, wait_until

pytestmark = pytest.mark.slow
RUN = "from l3ha.cli.main import run; run()"


@pytest.fixture
def cloud(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Scene:
    with scene(tmp_path, monkeypatch) as made:
        yield made  # type: ignore[misc]


def _run_watch(made: Scene, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = dict(made.env, L3HA_STATE_DIR=str(made.workdir / "state"))
    return subprocess.run(
        [sys.executable, "-c", RUN, "watch", *args],
        env=env, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


def test_once_observes_one_cycle_and_exits_zero_writing_the_status(cloud: Scene) -> None:
    # One cycle: an interval of 1 s (not 0.2) so a read slowed by a loaded machine is not
    # judged stale data (a halt this test is not about).
    proc = _run_watch(cloud, *FAST_WATCH, "--interval", "1", "--once")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    events = [
        json.loads(line)["event"] for line in proc.stderr.splitlines() if line.startswith("{")
    ]
    assert "ready" in events and events[-1] == "stopped"
    status = json.loads((cloud.workdir / "state" / "watch-status.json").read_text())
    assert status["leader"] is True and status["halts"] == []
    assert status["verdicts"]["observing"] == 5  # one look proves no agent alive
    assert status["verdicts"]["alive"] == 0
    assert status["state"] == "stopped"  # a clean stop says so: 'l3ha check' is not left stale


def test_dry_run_logs_the_moves_it_would_make_and_changes_nothing(cloud: Scene) -> None:
    watch = cloud.start_watch("--dry-run")
    watch.wait_event("ready")
    before = cloud.bindings()
    victims = {r for r, hosts in before.items() if "net-3" in hosts}
    cloud.emu.faults.kill_agent("net-3")
    wait_until(
        lambda: {e["router"] for e in watch.events("move")} >= victims, 20, "the planned moves"
    )
    assert {e["outcome"] for e in watch.events("move")} == {"planned"}
    # each move names the host and the router beside the ids
    assert {e["source_host"] for e in watch.events("move")} == {"net-3"}
    assert all(e["router_name"] and e["target_host"] for e in watch.events("move"))
    action = watch.wait_event("action", action="evacuate")
    assert action["agent_host"] == "net-3" and action["agent"] != "net-3"
    dead = watch.wait_event("verdict", agent="net-3", verdict="dead")
    assert dead["agent_id"] == action["agent"]
    assert changed(before, cloud.bindings()) == []
    assert watch.terminate() == 0


def test_sighup_rereads_the_configuration_file(cloud: Scene) -> None:
    config = cloud.workdir / "l3ha.conf"
    config.write_text("[watch]\nauto_rebalance = false\n", encoding="utf-8")
    watch = cloud.start_watch("--config-file", str(config))
    watch.wait_event("ready")
    config.write_text("[watch]\ndead_after = not-a-number\n", encoding="utf-8")
    watch.process.send_signal(1)  # SIGHUP
    failed = watch.wait_event("reload_failed")
    assert "dead_after" in str(failed["error"])  # a bad file keeps the old settings
    config.write_text(f"[watch]\ndead_after = {DEAD_AFTER + 1}\n", encoding="utf-8")
    watch.process.send_signal(1)
    watch.wait_event("reloaded")
    assert watch.process.poll() is None
    assert watch.terminate() == 0


def test_metrics_are_served_on_loopback_with_verdicts_gate_and_leader(cloud: Scene) -> None:
    port = free_port()
    watch = cloud.start_watch("--metrics-port", str(port))  # the last flag wins
    watch.wait_event("ready")
    cloud.emu.faults.kill_agent("net-5")
    wait_until(lambda: _metric(port, "l3ha_agents", verdict="dead") == 1.0, 20, "dead agent")
    assert _metric(port, "l3ha_leader") == 1.0
    assert _metric(port, "l3ha_gate_halted") == 0.0
    wait_until(lambda: (_metric(port, "l3ha_moves_total", outcome="moved") or 0) > 0, 30, "moves")
    assert watch.terminate() == 0


def _metric(port: int, name: str, **labels: str) -> float | None:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    total = None
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total = (total or 0.0) + sample.value
    return total


def test_systemd_is_told_ready_and_the_watchdog_is_petted(cloud: Scene) -> None:
    path = cloud.workdir / "notify.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(str(path))
    listener.settimeout(20)
    cloud.env["NOTIFY_SOCKET"] = str(path)
    cloud.env["WATCHDOG_USEC"] = "2000000"
    watch = cloud.start_watch()
    seen: list[str] = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and seen.count("WATCHDOG=1") < 3:
        seen += listener.recv(4096).decode().splitlines()
    assert "READY=1" in seen and seen.count("WATCHDOG=1") >= 3
    assert watch.terminate() == 0
    listener.settimeout(5)
    tail = listener.recv(4096).decode().splitlines()
    while "STOPPING=1" not in tail:
        tail = listener.recv(4096).decode().splitlines()
    listener.close()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--coordination", "etcd3+http://127.0.0.1:1?lock_timeout=3"], "coordination service"),
        (["--dead-after", "-5"], "--dead-after"),
        (["--dataplane-probe", "udp:53"], "dataplane_probe"),
        (["--config-file", "/nonexistent/l3ha.conf"], "not found"),
        (["--report-interval", "100"], "report_interval"),
        (["--dataplane-confirms"], "dataplane_confirms needs dataplane_probe"),
    ],
)
def test_bad_input_is_one_line_and_a_nonzero_exit(
    cloud: Scene, args: list[str], message: str
) -> None:
    proc = _run_watch(cloud, "--once", "--metrics-port", "0", *args, timeout=60)
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_unreachable_cloud_is_one_line(tmp_path: Path) -> None:
    clouds = tmp_path / "clouds.yaml"
    clouds.write_text(
        "clouds:\n  gone:\n    auth_type: none\n"
        f"    network_endpoint_override: http://127.0.0.1:{free_port()}/\n",
        encoding="utf-8",
    )
    env = {"OS_CLIENT_CONFIG_FILE": str(clouds), "OS_CLOUD": "gone",
           "L3HA_STATE_DIR": str(tmp_path / "state"), "PATH": "/usr/bin:/bin"}  # fmt: skip
    env["PYTHONPATH"] = ":".join(p for p in sys.path if p)
    proc = subprocess.run(
        [sys.executable, "-c", RUN, "watch", "--once", "--metrics-port", "0"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
