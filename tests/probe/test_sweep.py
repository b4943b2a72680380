"""Leftover test namespaces are swept (as root): those of a pytest run that is gone, with the
processes inside them; this run's own only when asked (at session end); others never."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from .servers import PREFIX, ip, namespaces, owned_name, sweep_namespaces

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
    pytest.mark.skipif(shutil.which("ip") is None, reason="iproute2 (ip) is not installed"),
]


def pids_in(name: str) -> list[int]:
    listed = subprocess.run(
        ["ip", "netns", "pids", name], capture_output=True, text=True, check=False, timeout=10
    )
    return [int(word) for word in listed.stdout.split()]


def test_sweep_removes_namespaces_of_a_gone_run_and_kills_their_processes() -> None:
    gone_pid = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1  # never a live process
    stale = f"{PREFIX}{gone_pid}-sweep"
    own = owned_name("sweep")
    unowned = f"{PREFIX}x{os.getpid()}-sweep"  # not of the <pid>- form: never touched
    for name in (stale, own, unowned):
        ip("netns", "add", name)
    sleeper = subprocess.Popen(["ip", "netns", "exec", stale, "sleep", "30"])
    try:
        deadline = time.monotonic() + 5
        while sleeper.pid not in pids_in(stale) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sleeper.pid in pids_in(stale)

        assert sweep_namespaces(include_own=False) == [stale]
        assert sleeper.wait(5) == -9
        present = namespaces()
        assert stale not in present and own in present and unowned in present

        assert sweep_namespaces(include_own=True) == [own]
        assert own not in namespaces() and unowned in namespaces()
    finally:
        sleeper.kill()
        for name in (stale, own, unowned):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
