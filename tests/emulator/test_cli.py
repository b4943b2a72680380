"""``l3ha emulator serve`` and ``l3ha emulator fault`` as subprocesses, plus the openstack CLI."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

L3HA = [sys.executable, "-m", "l3ha.cli.main"]


def run(args: list[str], env: dict[str, str], timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    out = dict(os.environ)
    out["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    out.pop("OS_CLOUD", None)
    out.pop("OS_CLIENT_CONFIG_FILE", None)
    return out


@pytest.fixture
def served(env: dict[str, str], tmp_path: Path) -> Iterator[tuple[str, Path, dict[str, str]]]:
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps([{"at": 0, "fault": "slow-agent", "host": "net-2",
                                     "factor": 3}]))
    proc = subprocess.Popen([*L3HA, "emulator", "serve", "--port", "0", "--agents", "3",
                             "--routers", "6", "--ha-routers", "1", "--scenario",
                             str(scenario), "--dataplane-listeners", "2",
                             "--neutron-auto-failover", "--neutron-move-time", "0.5",
                             "--ha-vrrp-advert-int", "1"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        clouds = Path(proc.stdout.readline().split(": ", 1)[1].strip())
        assert url.startswith("http://127.0.0.1:") and url.endswith("/")
        yield url, clouds, env
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
        assert proc.stderr is not None and "emulator stopped" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_serve_writes_clouds_yaml_and_fault_finds_it(served: tuple[str, Path, dict]) -> None:
    url, clouds, env = served
    assert clouds == Path(env["XDG_CONFIG_HOME"]) / "l3ha" / "clouds.yaml"
    env = dict(env, OS_CLIENT_CONFIG_FILE=str(clouds), OS_CLOUD="l3ha-emulator")
    done = run([*L3HA, "emulator", "fault", "kill-agent", "net-1"], env)
    assert done.returncode == 0, done.stderr
    assert "kill-agent" in done.stdout
    done = run([*L3HA, "emulator", "fault", "mgmt-partition", "net-2", "5", "--url", url], env)
    assert done.returncode == 0, done.stderr
    done = run([*L3HA, "emulator", "fault", "kill-agent", "net-42", "--url", url], env)
    assert done.returncode == 2
    assert done.stderr.strip() == "l3ha: error: unknown agent host 'net-42'"
    with urllib.request.urlopen(f"{url}_emulator/state", timeout=10) as response:
        state = json.loads(response.read())
    assert [a["slow_factor"] for a in state["agents"]] == [1.0, 3.0, 1.0]  # from the scenario
    assert [a["running"] for a in state["agents"]] == [False, True, True]
    done = run([*L3HA, "emulator", "fault", "broker-outage", "30", "20", "--url", url], env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["fault=broker-outage", "seconds=30.0", "spread=20.0"]
    with urllib.request.urlopen(f"{url}_emulator/state", timeout=10) as response:
        assert json.loads(response.read())["broker_outage"] is True


def test_openstack_cli_against_emulator(served: tuple[str, Path, dict]) -> None:
    openstack = shutil.which("openstack") or str(Path(sys.executable).parent / "openstack")
    if not Path(openstack).exists():
        pytest.skip("python-openstackclient is not installed")
    _, clouds, env = served
    env = dict(env, OS_CLIENT_CONFIG_FILE=str(clouds), OS_CLOUD="l3ha-emulator")
    listed = run([openstack, "network", "agent", "list", "-f", "json"], env, timeout=60)
    assert listed.returncode == 0, listed.stderr
    agents = {a["Host"]: a["ID"] for a in json.loads(listed.stdout)}
    assert sorted(agents) == ["net-1", "net-2", "net-3"]
    hosting = run([openstack, "network", "agent", "list", "--router", "router-0001", "--long",
                   "-f", "json"], env, timeout=60)
    assert hosting.returncode == 0, hosting.stderr
    assert {a["Host"]: a["HA State"] for a in json.loads(hosting.stdout)} == {
        "net-1": "active", "net-2": "standby"}


def test_sigterm_stops_serve_cleanly(env: dict[str, str]) -> None:
    proc = subprocess.Popen([*L3HA, "emulator", "serve", "--port", "0", "--agents", "1",
                             "--routers", "1"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("http://127.0.0.1:")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_bad_serve_options_are_one_line_errors(env: dict[str, str], tmp_path: Path) -> None:
    for args, message in [
        (["--agents", "-1"], "agents must be 0 or more, not -1"),
        (["--scenario", str(tmp_path / "none.yaml")], "cannot read scenario"),
        (["--ha-routers", "5", "--routers", "2"], "must not exceed routers"),
    ]:
        done = run([*L3HA, "emulator", "serve", "--port", "0", *args], env)
        assert done.returncode == 2
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], done.stderr


def test_fault_without_emulator_is_an_error(env: dict[str, str]) -> None:
    done = run([*L3HA, "emulator", "fault", "kill-agent", "net-1", "--url",
                "http://127.0.0.1:9/"], env)
    assert done.returncode == 1
    assert done.stderr.startswith("l3ha: error: emulator at http://127.0.0.1:9/ not reachable")
    done = run([*L3HA, "emulator", "fault", "kill-agent", "net-1", "--os-cloud", "nope"], env)
    assert done.returncode == 2 and "no clouds.yaml entry 'nope'" in done.stderr


def test_fault_with_a_malformed_url_is_a_one_line_error(env: dict[str, str]) -> None:
    for url in ("notaurl", "http://127.0.0.1:notaport/"):
        done = run([*L3HA, "emulator", "fault", "--url", url, "kill-agent", "net-1"], env)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("l3ha: error: emulator URL"), done.stderr


@pytest.mark.parametrize("content", ["clouds: [1]\n", "clouds: {x: [1]}\n",
                                     "clouds: {x: {auth: 3}}\n"])
def test_fault_with_a_malformed_clouds_yaml_is_a_one_line_error(
    env: dict[str, str], tmp_path: Path, content: str
) -> None:
    clouds = tmp_path / "clouds.yaml"
    clouds.write_text(content)
    env = {**env, "OS_CLIENT_CONFIG_FILE": str(clouds)}
    done = run([*L3HA, "emulator", "fault", "--os-cloud", "x", "kill-agent", "net-1"], env)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("l3ha: error:"), done.stderr
    assert "Traceback" not in done.stderr


def test_non_finite_fault_and_serve_values_are_rejected(env: dict[str, str]) -> None:
    done = run([*L3HA, "emulator", "fault", "--url", "http://127.0.0.1:9/", "broker-outage",
                "nan"], env)
    assert done.returncode == 2 and "finite" in done.stderr, done.stderr
    for option in ("--report-interval", "--agent-down-time", "--router-base-time"):
        done = run([*L3HA, "emulator", "serve", "--port", "0", option, "nan"], env)
        assert done.returncode == 2 and "finite" in done.stderr, done.stderr


def test_serve_warns_once_when_agents_would_flap(env: dict[str, str]) -> None:
    proc = subprocess.Popen([*L3HA, "emulator", "serve", "--port", "0", "--agents", "1",
                             "--routers", "1", "--report-interval", "100",
                             "--agent-down-time", "10"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline().startswith("http://127.0.0.1:")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        lines = proc.stderr.read().strip().splitlines()
        assert lines[-1] == "l3ha: emulator stopped"
        assert len(lines) == 2 and "would flap" in lines[0], lines
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
