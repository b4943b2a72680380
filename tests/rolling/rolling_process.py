"""A real-time emulated cloud of three network nodes and ``l3ha rolling`` as a child process.

Not a test module. ``Rollout`` holds the emulator, the environment every
child gets (clouds.yaml, state dir), and runs ``l3ha rolling`` with options
tuned to the fast emulated agents; the maintenance commands are small shell
scripts that stop and start the host's emulated agent through
``l3ha emulator fault``, exactly as an operator's ssh command would.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from l3ha.cloud.adapter import NeutronCloud, connect
from l3ha.emulator import Emulator
from l3ha.emulator.testing import PRE_CALIBRATION, Clocking, emulated_cloud
from l3ha.journal import Journal
from l3ha.operations.rolling import RollingRecord

#: Three network nodes heartbeating every 0.2 s (stamped to the second, as Neutron does).
CLOUD = {
    **PRE_CALIBRATION,
    "agents": 3,
    "routers": 24,
    "ha_routers": 2,
    "max_l3_agents_per_router": 2,
    "report_interval": 0.2,
    "agent_down_time": 1.0,
    "router_base_time": 0.05,
    "router_port_time": 0.01,
    "ha_takeover_time": 0.5,
    "ha_vrrp_advert_int": 0.2,
    "dataplane_listeners": 24,
    "seed": 11,
}

HOSTS = "net-1,net-2,net-3"
L3HA = f"{shlex.quote(sys.executable)} -c 'from l3ha.cli.main import run; run()'"


def rolling_options(port: int) -> list[str]:
    """l3ha rolling tuned to that cloud: a heartbeat is missed after 2 s of no change."""
    return [
        "--stable-for", "2", "--dead-after", "3", "--report-interval", "1",
        "--poll-interval", "0.2", "--canary-timeout", "10", "--port-timeout", "20",
        "--probe-routers", f"tcp:{port}", "--probe-interval", "0.1", "--probe-timeout", "0.5",
    ]  # fmt: skip


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.05)


@dataclass
class Rollout:
    emu: Emulator
    cloud: NeutronCloud
    workdir: Path
    env: dict[str, str]

    @property
    def state_dir(self) -> Path:
        return self.workdir / "state"

    def script(self, name: str, body: str) -> str:
        """A maintenance script; ``$HOST`` is its first argument, ``l3ha`` a function."""
        path = self.workdir / name
        path.write_text(f'set -e\nHOST="$1"\nl3ha() {{ {L3HA} "$@"; }}\n{body}\n')
        return f"sh {shlex.quote(str(path))} {{host}}"

    def command(self, *args: str) -> list[str]:
        port = int(self.emu.state()["dataplane_port"])
        return [sys.executable, "-c", "from l3ha.cli.main import run; run()", "rolling",
                "--hosts", HOSTS, *rolling_options(port), *args]  # fmt: skip

    def start(self, *args: str, answers: bool = False) -> subprocess.Popen[str]:
        """``l3ha rolling`` with ``args``; its stdin a pipe with ``answers``, else empty."""
        stdin = subprocess.PIPE if answers else subprocess.DEVNULL
        return subprocess.Popen(
            self.command(*args), env=self.env, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=stdin,
        )  # fmt: skip

    def run(
        self, *args: str, answers: str | None = None, timeout: float = 180.0
    ) -> tuple[int, dict[str, Any], str]:
        """Run to the end with ``-f json`` (``answers`` on its stdin): exit code, the summary
        document, stderr."""
        child = self.start("-f", "json", *args, answers=answers is not None)
        out, err = child.communicate(answers, timeout=timeout)
        start = out.find("{\n")
        doc = json.loads(out[start:]) if start >= 0 else {}
        return child.returncode, doc, err

    def agent(self, host: str) -> Any:
        return self.cloud.get_agent(self.emu.agent_ids_by_host()[host])

    def routers_on(self, host: str) -> list[str]:
        return [
            b.router_id for b in self.cloud.routers_on_agent(self.emu.agent_ids_by_host()[host])
        ]

    def steps(self) -> list[Any]:
        with RollingRecord(self.state_dir) as record:
            latest = record.latest_run()
            return record.steps(latest.id) if latest else []

    def moves(self) -> list[dict[str, object]]:
        with Journal(self.state_dir) as journal:
            return journal.history_rows()


@contextmanager
def rollout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **cfg: object) -> Iterator[Rollout]:
    """The emulated cloud (``CLOUD`` plus ``cfg``), named by this process's environment too."""
    settings: dict[str, object] = dict(CLOUD)
    settings.update(cfg)
    with emulated_cloud(Clocking.REAL, workdir=tmp_path, **settings) as cloud:
        assert cloud.emulator is not None
        env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        env.update(
            cloud.environ(),
            L3HA_STATE_DIR=str(tmp_path / "state"),
            PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
        )
        for key, value in cloud.environ().items():
            monkeypatch.setenv(key, value)
        yield Rollout(cloud.emulator, connect(), tmp_path, env)
