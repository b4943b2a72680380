"""A real OVN cloud in a box: gateway chassis fail over by BFD and pre-empt back.

Brings up ``l3ha.lab.stack.ovnstack`` (OVN central, Neutron ML2/OVN on MariaDB, three
gateway chassis each with its own ovsdb-server, userspace ovs-vswitchd and
ovn-controller, namespaces ``l3ov-*``), checks that the client reaches every router's
gateway, kills the chassis primary for a router, measures how long the gateway stays
silent, revives it and records whether the gateway moves back (pre-emption: the
failback outage l3ha is to prevent), stops the southbound database for 3 s (the
gateways keep answering), then tears everything down. Needs root, the
packages of scripts/install-system-deps.sh (ovn-central, ovn-host) and the Neutron
virtualenv (``L3HA_NEUTRON_PYTHON``); skips with the reason without them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from l3ha.cli.main import main
from l3ha.lab.netns import list_namespaces
from l3ha.lab.stack.ovnspec import AGENT_TYPE, OvnSpec, owns_ovn_namespace
from l3ha.lab.stack.ovnstack import OvnStack, missing_programs, ovn_stack_up, ovn_teardown
from l3ha.lab.stack.ovntopology import longest_silence
from l3ha.lab.stack.processes import StackError, pids_naming
from l3ha.lab.stack.services import check_pymysql, neutron_python

FAILOVER_LIMIT_S = 15.0  # BFD detects in ~3 s; generous for a loaded machine
WATCH_S = 12.0


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


def leftovers(directory: Path) -> list[str]:
    found = [n for n in list_namespaces() if owns_ovn_namespace(n)]
    found += [f"pid {p}" for p in pids_naming(str(directory) + "/")]
    return found + ([str(directory)] if directory.exists() else [])


def wait_primary(stack: OvnStack, router: dict[str, str], host: str, timeout: float) -> float:
    """Seconds until ``host`` is the router's primary again, or -1 if it is not by ``timeout``."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if stack.primary(router) == host:
            return time.monotonic() - began
        time.sleep(0.2)
    return -1.0


def report(line: str) -> None:
    print(f"ovnstack: {line}")


@pytest.mark.root
@pytest.mark.neutron
@pytest.mark.slow
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_gateway_fails_over_by_bfd_and_pre_empts_back(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    directory = tmp_path_factory.mktemp("ovn") / "stack"

    def fault(*args: str) -> None:  # through the CLI, as an operator rehearses
        assert main(["lab", "stack", "fault", *args, "--dir", str(directory)]) == 0

    began = time.monotonic()
    stack = ovn_stack_up(OvnSpec(chassis=3, routers=2), directory)
    try:
        report(f"up in {time.monotonic() - began:.1f} s")
        agents = stack.api.agents(AGENT_TYPE)
        assert sorted(a["host"] for a in agents if a["alive"]) == list(stack.spec.hosts)
        assert stack.answering() == [r["gateway_ip"] for r in stack.routers]
        router = stack.routers[0]
        victim = stack.primary(router)
        assert victim in stack.spec.hosts
        silent = longest_silence(router["gateway_ip"], WATCH_S, lambda: fault("kill-node", victim))
        report(f"kill {victim}: gateway silent {silent:.1f} s, now on {stack.primary(router)}")
        assert silent < FAILOVER_LIMIT_S
        assert stack.primary(router) not in ("", victim)
        address = router["gateway_ip"]
        silent = longest_silence(address, WATCH_S, lambda: fault("revive-node", victim))
        back = wait_primary(stack, router, victim, 10.0)
        report(f"revive {victim}: pre-empted back: {back >= 0}; gateway silent {silent:.1f} s")
        assert stack.answering() == [r["gateway_ip"] for r in stack.routers]
        silent = longest_silence(router["gateway_ip"], 8.0, lambda: fault("sb-outage", "3"))
        report(f"southbound down 3 s: gateway silent {silent:.1f} s (the data plane keeps going)")
        assert silent < FAILOVER_LIMIT_S
        assert stack.answering() == [r["gateway_ip"] for r in stack.routers]
    finally:
        assert main(["lab", "stack", "down", "--dir", str(directory)]) == 0
        ovn_teardown(directory)  # nothing left to do unless ``down`` failed
    assert leftovers(directory) == []


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
