"""One way for tests to get an emulated cloud: in this process or as a server, manual or real clock.

I/O: starts an emulator (loopback sockets, threads) in this process, or ``l3ha emulator
serve`` as a child process; writes a clouds.yaml; sets and restores the ``OS_*``
variables that name the cloud when asked to.

``emulated_cloud(...)`` is a context manager that yields an ``EmulatedCloud``:

- ``clock=Clocking.MANUAL`` (the default) or a ``ManualClock`` of the test's: the
  emulator runs in this process on that clock; time moves only with
  ``cloud.emulator.advance(seconds)``.
- ``clock=Clocking.REAL``: in this process on the real clock (agents heartbeat on their
  own). With ``server=True`` it is a child process (``l3ha emulator serve``), reached
  only over HTTP, and ``cloud.emulator`` is None.

Settings are ``EmulatorConfig`` fields; ``SMALL`` and ``FAST`` are the presets most tests
start from, ``PRE_CALIBRATION`` the agents' timing of the tests written before the defaults
were calibrated on a real stack. With ``workdir`` the cloud is written to
``workdir/clouds.yaml``; with ``environ`` (e.g. ``os.environ``) ``OS_CLIENT_CONFIG_FILE`` and
``OS_CLOUD`` are set there for the duration and restored afterwards.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass, fields
from enum import StrEnum
from pathlib import Path
from typing import Any

from l3ha.clock import ManualClock
from l3ha.emulator.config import EmulatorConfig
from l3ha.emulator.server import CLOUD_NAME, Emulator

#: The agents' timing before it was calibrated on a real stack (docs/fidelity.md): quick,
#: very parallel agents whose ports turn ACTIVE as they forward and that reconnect the moment
#: a broker outage ends. Tests written against it keep it explicitly.
PRE_CALIBRATION: dict[str, Any] = {
    "router_base_time": 1.5,
    "router_port_time": 0.25,
    "agent_concurrency": 8,
    "port_active_delay": 0.0,
    "broker_reconnect_time": 0.0,
    "ha_takeover_time": 7.0,
}
#: Agents that heartbeat every 0.2 s and are dead after 1 s; routers processed in tens of ms.
FAST: dict[str, Any] = {
    **PRE_CALIBRATION,
    "report_interval": 0.2,
    "agent_down_time": 1.0,
    "router_base_time": 0.02,
    "router_port_time": 0.005,
}
#: 4 agents in 2 AZs, 20 routers of which 2 busy and 2 HA (pre-calibration agents).
SMALL: dict[str, Any] = {
    **PRE_CALIBRATION,
    "agents": 4,
    "routers": 20,
    "busy": 2,
    "ha_routers": 2,
    "azs": 2,
    "report_interval": 0.2,
    "agent_down_time": 1.0,
    "router_base_time": 0.05,
}
SERVER_START_TIMEOUT = 30.0
_RUN_CLI = "from l3ha.cli.main import run; run()"


class Clocking(StrEnum):
    """Which clock the emulator runs on."""

    MANUAL = "manual"
    REAL = "real"


@dataclass(frozen=True)
class EmulatedCloud:
    """A started emulated cloud: where it is and how a client names it."""

    url: str
    name: str
    clouds_yaml: Path | None
    #: The emulator itself when it runs in this process (None: a server process).
    emulator: Emulator | None

    def environ(self) -> dict[str, str]:
        """The ``OS_*`` variables that name this cloud (empty without a clouds.yaml)."""
        if self.clouds_yaml is None:
            return {}
        return {"OS_CLIENT_CONFIG_FILE": str(self.clouds_yaml), "OS_CLOUD": self.name}


@contextlib.contextmanager
def emulated_cloud(
    clock: Clocking | str | ManualClock = Clocking.MANUAL,
    *,
    server: bool = False,
    workdir: Path | None = None,
    name: str = CLOUD_NAME,
    environ: MutableMapping[str, str] | None = None,
    **settings: Any,
) -> Iterator[EmulatedCloud]:
    """A started emulated cloud, stopped when the block ends (see the module docstring)."""
    if isinstance(clock, ManualClock):
        manual: ManualClock | None = clock
    else:
        manual = ManualClock() if Clocking(clock) is Clocking.MANUAL else None
    if server and manual is not None:
        raise ValueError("an emulator served by another process runs on the real clock")
    started = (
        _served(workdir, name, settings) if server else _in_process(manual, workdir, name, settings)
    )
    with started as cloud, _variables(environ, cloud.environ()):
        yield cloud


@contextlib.contextmanager
def _in_process(
    clock: ManualClock | None, workdir: Path | None, name: str, settings: dict[str, Any]
) -> Iterator[EmulatedCloud]:
    with Emulator(EmulatorConfig(**settings), clock=clock) as emu:
        path = None if workdir is None else emu.write_clouds_yaml(workdir / "clouds.yaml", name)
        yield EmulatedCloud(emu.url, name, path, emu)


@contextlib.contextmanager
def _served(workdir: Path | None, name: str, settings: dict[str, Any]) -> Iterator[EmulatedCloud]:
    if workdir is None:
        raise ValueError("an emulator served by another process needs a workdir")
    if name != CLOUD_NAME:
        raise ValueError(f"l3ha emulator serve names its cloud {CLOUD_NAME!r}")
    path = workdir / "clouds.yaml"
    argv = [sys.executable, "-c", _RUN_CLI, "emulator", "serve", "--port", "0",
            "--clouds-yaml", str(path), *serve_flags(settings)]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = _first_line(proc)
        yield EmulatedCloud(url, name, path, None)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def serve_flags(settings: dict[str, Any]) -> list[str]:
    """``l3ha emulator serve`` flags for ``EmulatorConfig`` settings.

    A boolean that differs from its default is a bare ``--name`` (or ``--no-name``).
    """
    defaults = {f.name: f.default for f in fields(EmulatorConfig)}
    flags: list[str] = []
    for key, value in settings.items():
        if key not in defaults:
            raise TypeError(f"EmulatorConfig has no setting {key!r}")
        name = key.replace("_", "-")
        if isinstance(value, bool):
            if value != defaults[key]:
                flags.append(f"--{name}" if value else f"--no-{name}")
        else:
            flags += [f"--{name}", str(value)]
    return flags


def _first_line(proc: subprocess.Popen[str]) -> str:
    """The URL ``serve`` prints first (bounded wait); its error line when it could not start."""
    assert proc.stdout is not None and proc.stderr is not None
    watchdog = threading.Timer(SERVER_START_TIMEOUT, proc.kill)
    watchdog.start()
    try:
        line = proc.stdout.readline().strip()
    finally:
        watchdog.cancel()
    if line.startswith("http://"):
        return line
    proc.kill()
    proc.wait()
    raise RuntimeError(f"l3ha emulator serve did not start: {proc.stderr.read().strip()}")


@contextlib.contextmanager
def _variables(environ: MutableMapping[str, str] | None, values: dict[str, str]) -> Iterator[None]:
    """Set ``values`` in ``environ`` for the block, then put back what was there."""
    if environ is None or not values:
        yield
        return
    before = {key: environ.get(key) for key in values}
    environ.update(values)
    try:
        yield
    finally:
        for key, old in before.items():
            if old is None:
                environ.pop(key, None)
            else:
                environ[key] = old
