"""Real ``l3ha watch`` processes against a real-time emulator, for the scenario tests.

Not a test module. ``WatchProcess`` runs the daemon as a child process with
JSON logs in a file and reads its events back; ``Cloudwatch`` wraps the
emulator and the adapter with the few questions the scenarios ask (bindings,
moves between two moments, unhosted routers, ports ACTIVE).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from l3ha.cloud.adapter import NeutronCloud, connect
from l3ha.emulator import Emulator
from l3ha.emulator.testing import PRE_CALIBRATION, Clocking, emulated_cloud

#: Emulated agents that heartbeat every 0.2 s and count as dead after 1 s.
FAST_CLOUD = {
    **PRE_CALIBRATION,
    "report_interval": 0.2,
    "agent_down_time": 1.0,
    "router_base_time": 0.05,
    "router_port_time": 0.01,
}

#: The daemon tuned to that cloud. Heartbeats are stamped to the second (as Neutron
#: stamps them), so the value l3ha watches changes once a second: dead after 3 s of
#: no change and 3 stale observations, a heartbeat "missed" after 2 s.
DEAD_AFTER = 3.0
FAST_WATCH = (
    "--interval", "0.2",
    "--dead-after", str(DEAD_AFTER),
    "--dead-observations", "3",
    "--report-interval", "1",
    "--port-timeout", "20",
    "--metrics-port", "0",
    "--log-format", "json",
)  # fmt: skip

_RUN = "from l3ha.cli.main import run; run()"


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``check`` every 50 ms until it holds (bounded)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.05)


class WatchProcess:
    """One ``l3ha watch`` child process."""

    def __init__(self, workdir: Path, env: dict[str, str], args: list[str], name: str) -> None:
        self.log_path = workdir / f"{name}.log"
        self.name = name
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-c", _RUN, "watch", *FAST_WATCH, "--member-id", name, *args],
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )

    def events(self, name: str | None = None) -> list[dict[str, object]]:
        """Every JSON event logged so far (only ``name`` events when given)."""
        found = []
        for line in self.log_path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            if isinstance(doc, dict) and (name is None or doc.get("event") == name):
                found.append(doc)
        return found

    def wait_event(self, name: str, timeout: float = 20.0, **fields: object) -> dict[str, object]:
        """The first ``name`` event whose fields match, waiting for it."""

        def match() -> dict[str, object] | None:
            for doc in self.events(name):
                if all(doc.get(k) == v for k, v in fields.items()):
                    return doc
            return None

        wait_until(lambda: match() is not None or self.process.poll() is not None, timeout, name)
        found = match()
        if found is None:
            raise AssertionError(f"{self.name} exited ({self.process.returncode}): {self.tail()}")
        return found

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def terminate(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait; the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)

    def kill(self) -> None:
        """SIGKILL (nothing is cleaned up)."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)

    def close(self) -> None:
        self.kill()
        self._log.close()


@dataclass
class Scene:
    """An emulated cloud and the daemons watching it."""

    emu: Emulator
    cloud: NeutronCloud
    workdir: Path
    env: dict[str, str]

    started: list[WatchProcess] = field(default_factory=list)

    def start_watch(self, *args: str, name: str = "watch", state: str = "state") -> WatchProcess:
        env = dict(self.env, L3HA_STATE_DIR=str(self.workdir / state))
        process = WatchProcess(self.workdir, env, list(args), name)
        self.started.append(process)
        return process

    def bindings(self) -> dict[str, frozenset[str]]:
        """Router id -> the hosts of its agents."""
        snapshot = self.cloud.read_snapshot()
        hosts = {a.id: a.host for a in snapshot.agents}
        return {
            r.id: frozenset(hosts[b.agent_id] for b in snapshot.bindings_of_router(r.id))
            for r in snapshot.routers
        }

    def state(self) -> dict[str, object]:
        return self.emu.state()


def changed(before: dict[str, frozenset[str]], after: dict[str, frozenset[str]]) -> list[str]:
    """Routers whose hosting agents differ."""
    return sorted(r for r in before if after.get(r) != before[r])


@contextmanager
def scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **cfg: object) -> Iterator[Scene]:
    """A real-time emulator (``FAST_CLOUD`` plus ``cfg``) and the environment for daemons;
    this process's cloud configuration names it too."""
    settings: dict[str, object] = {"agents": 5, "routers": 30, "busy": 4, "seed": 3}
    settings.update(FAST_CLOUD)
    settings.update(cfg)
    with emulated_cloud(Clocking.REAL, workdir=tmp_path, **settings) as cloud:
        assert cloud.emulator is not None
        env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        env.update(cloud.environ())
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        for key, value in cloud.environ().items():
            monkeypatch.setenv(key, value)
        made = Scene(cloud.emulator, connect(), tmp_path, env)
        try:
            yield made
        finally:  # no daemon outlives its test, whatever the test did
            for process in made.started:
                process.close()
