"""``l3ha lab`` lifecycle through the CLI: up, status, fail/recover errors, down, crash cleanup.

``down`` must leave no namespace with the lab's prefix and no process of the
lab, also when the state dir was lost or ``lab up`` itself was killed midway.
"""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.lab.conftest import LabFactory, needs_lab, unique_name, wait_until

from l3ha.cli.main import main
from l3ha.lab import netns
from l3ha.lab.topology import owned_by

pytestmark = [*needs_lab, pytest.mark.slow]


def l3ha(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "l3ha.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def lab_processes(name: str, state_dir: Path) -> list[int]:
    """Live pids inside the lab's namespaces or running with its state dir on the command line."""
    inside = [p for ns in netns.list_namespaces() if owned_by(ns, name) for p in netns.pids_in(ns)]
    marker = str(state_dir)
    mentioned = [
        int(p.name)
        for p in Path("/proc").iterdir()
        if p.name.isdigit() and marker in netns.cmdline(int(p.name))
    ]
    return sorted({p for p in inside + mentioned if netns.alive(p)})


def assert_gone(name: str, state_dir: Path) -> None:
    assert [ns for ns in netns.list_namespaces() if owned_by(ns, name)] == []
    wait_until("lab processes to exit", lambda: lab_processes(name, state_dir) == [], 5)


@pytest.fixture
def lab_name(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    name = unique_name()
    yield name, tmp_path / "state"
    l3ha("lab", "down", "--name", name, "--state-dir", str(tmp_path / "state"))


def test_up_status_errors_down(lab_name: tuple[str, Path]) -> None:
    name, state = lab_name
    opts = ["--name", name, "--state-dir", str(state)]
    up = l3ha("lab", "up", *opts, "--nodes", "2", "--routers", "2", "--advert-int", "0.1")
    assert up.returncode == 0, up.stderr
    status = l3ha("lab", "status", *opts, "-f", "json")
    rows = json.loads(status.stdout)
    assert [r["router"] for r in rows] == ["r1", "r2"]
    for row in rows:
        (holder,) = row["holders"]
        assert row["monitors"][holder]["state"] == "master"
    pids = lab_processes(name, state)
    assert len(pids) >= 2 + 2 * 2  # keepalived per node + a monitor per node and router

    for args, needle in [
        (["lab", "up", *opts], "already up"),
        (["lab", "fail", "n7", *opts], "unknown node 'n7'; nodes are: n1, n2"),
        (["lab", "recover", "n1", *opts], "not failed"),
        (["lab", "status", "--name", "BAD-name"], "invalid lab name"),
        (
            ["lab", "status", "--name", unique_name(), "--state-dir", str(state.parent / "x")],
            "not up",
        ),
    ]:
        bad = l3ha(*args)
        assert bad.returncode == 2, (args, bad.stderr)
        assert needle in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr

    down = l3ha("lab", "down", *opts)
    assert down.returncode == 0, down.stderr
    assert_gone(name, state)
    assert not any(netns.alive(p) for p in pids)


def test_down_of_another_lab_leaves_this_one_alone(lab_name: tuple[str, Path]) -> None:
    name, state = lab_name
    opts = ["--name", name, "--state-dir", str(state)]
    up = l3ha("lab", "up", *opts, "--nodes", "2", "--routers", "1", "--advert-int", "0.1")
    assert up.returncode == 0, up.stderr
    pids = lab_processes(name, state)
    other = unique_name()
    taken = l3ha("lab", "up", "--name", other, "--state-dir", str(state))
    assert taken.returncode == 2 and f"is used by lab {name!r}" in taken.stderr, taken.stderr
    down = l3ha("lab", "down", "--name", other, "--state-dir", str(state))
    assert down.returncode == 0, down.stderr
    assert f"records lab {name!r}" in down.stderr, down.stderr
    assert "stopped 0 processes" in down.stdout and "removed 0 namespaces" in down.stdout
    assert all(netns.alive(p) for p in pids)
    assert (state / "lab.json").exists()
    status = l3ha("lab", "status", *opts, "-f", "json")
    assert status.returncode == 0, status.stderr
    (row,) = json.loads(status.stdout)
    assert len(row["holders"]) == 1 and all(m["running"] for m in row["monitors"].values())


def foreign_addresses(namespace: str) -> list[str]:
    """Addresses in ``namespace`` outside 169.254.0.0/16, except 127.0.0.1 and ::1 on lo."""
    link_local = ipaddress.ip_network("169.254.0.0/16")
    found = []
    for line in netns.ip("-n", namespace, "-o", "address", "show").splitlines():
        device, cidr = line.split()[1], line.split()[3]
        address = ipaddress.ip_interface(cidr).ip
        loopback = device == "lo" and str(address) in ("127.0.0.1", "::1")
        if not loopback and address not in link_local:
            found.append(f"{device} {cidr}")
    return found


def test_lab_addresses_are_in_169_254_only(make_lab: LabFactory) -> None:
    lab = make_lab(nodes=2, routers=1, advert_int=0.1)
    found = {ns: foreign_addresses(ns) for ns in lab.spec.namespaces()}
    assert found == {ns: [] for ns in lab.spec.namespaces()}


def test_keepalived_missing_is_one_line_exit_2(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path)}
    bad = l3ha("lab", "up", "--name", unique_name(), "--state-dir", str(tmp_path), env=env)
    assert bad.returncode == 2
    assert "keepalived not found" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_down_after_the_state_dir_is_lost(lab_name: tuple[str, Path]) -> None:
    name, state = lab_name
    opts = ["--name", name, "--state-dir", str(state)]
    up = l3ha("lab", "up", *opts, "--nodes", "2", "--routers", "1", "--advert-int", "0.1")
    assert up.returncode == 0, up.stderr
    (state / "lab.json").unlink()
    assert lab_processes(name, state)
    down = l3ha("lab", "down", *opts)
    assert down.returncode == 0, down.stderr
    assert_gone(name, state)


def test_down_after_up_was_killed_midway(lab_name: tuple[str, Path]) -> None:
    name, state = lab_name
    argv = [sys.executable, "-m", "l3ha.cli.main", "lab", "up", "--name", name]
    argv += ["--state-dir", str(state), "--routers", "2", "--advert-int", "0.1"]
    up = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until("monitors starting", (state / "logs" / "monitor-r1-n2.log").exists, 60)
    finally:
        up.send_signal(signal.SIGKILL)
        up.wait()
    time.sleep(0.5)
    assert lab_processes(name, state)
    down = l3ha("lab", "down", "--name", name, "--state-dir", str(state))
    assert down.returncode == 0, down.stderr
    assert_gone(name, state)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1", "soon"])
def test_settle_timeout_must_be_a_positive_finite_number(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["lab", "up", "--name", unique_name(), "--state-dir", str(tmp_path / "s")]
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--settle-timeout", value])
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert "argument --settle-timeout: " in err.strip().splitlines()[-1], err
    assert not (tmp_path / "s").exists()


def test_not_root_is_one_line_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The effective uid is the operating system's edge: pretend to be an ordinary user.
    monkeypatch.setattr(os, "geteuid", lambda: 65534)
    code = main(["lab", "up", "--name", unique_name(), "--state-dir", str(tmp_path / "s")])
    err = capsys.readouterr().err
    assert code == 2
    assert "needs root" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "s").exists()
