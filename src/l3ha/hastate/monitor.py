"""The ordered VIP state monitor process. I/O: network namespace, netlink, files, sockets, signals.

It replaces keepalived notify scripts: it watches the VIP itself (netlink
address events, subscribed before the current addresses are read), numbers
each master/backup transition, and delivers it in order to a state file
(atomic, never backwards), to unix socket consumers (JSON lines) and to an
optional hook (serial, coalesced). The decisions live in ``vipstate`` (pure);
this module only wires the I/O together.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from l3ha.clock import Clock, SystemClock
from l3ha.hastate.hooks import HookRunner, parse_command
from l3ha.hastate.netlink import AddressWatcher, enter_netns, netlink_socket
from l3ha.hastate.server import TransitionServer
from l3ha.hastate.statefile import StateFile
from l3ha.hastate.vipstate import IPInterface, Transition, VipStateMachine

LOG = logging.getLogger(__name__)
POLL_SECONDS = 1.0
HOOK_STOP_WAIT = 5.0


@dataclass(frozen=True)
class MonitorConfig:
    """What to watch and where to report."""

    netns: str | None
    device: str
    vip: IPInterface
    state_file: Path | None = None
    socket_path: Path | None = None
    exec_command: str | None = None
    exec_timeout: float = 60.0

    def about(self) -> dict[str, Any]:
        """The fields added to every reported document."""
        return {"netns": self.netns, "device": self.device, "vip": str(self.vip)}


class Monitor:
    """One running monitor; ``run`` blocks until ``stop`` is called.

    ``run_id`` (random per start) goes with every transition, so consumers see
    when a restarted monitor numbers from 1 again (no state file).
    """

    def __init__(
        self, config: MonitorConfig, clock: Clock | None = None, out: TextIO | None = None
    ) -> None:
        self.config = config
        self.clock = clock or SystemClock()
        self.out = out
        self._stop = threading.Event()
        self._wake_r, self._wake_w = os.pipe()
        self.transitions: list[Transition] = []
        self.state_file: StateFile | None = None
        self.server: TransitionServer | None = None
        self.hooks: HookRunner | None = None
        self.machine: VipStateMachine | None = None
        self.run_id = secrets.token_hex(8)  # random per start, sent with every transition

    def stop(self) -> None:
        """Ask ``run`` to return (safe from a signal handler or another thread)."""
        self._stop.set()
        with contextlib.suppress(OSError):  # already closed: run has returned
            os.write(self._wake_w, b"x")

    def run(self) -> None:
        """Watch until stopped; resources are released on every exit path."""
        cfg = self.config
        sock = netlink_socket(None)
        try:
            watcher = AddressWatcher(sock, cfg.device, cfg.vip)
            self._open_outputs()
            watcher.subscribe_and_dump()
            while not self._stop.is_set():
                for present in watcher.wait(POLL_SECONDS, self._wake_r):
                    self._observe(present)
        finally:
            sock.close()
            self._close_outputs()

    def _open_outputs(self) -> None:
        cfg = self.config
        last_seq = 0
        if cfg.state_file is not None:
            self.state_file = StateFile(cfg.state_file, cfg.about())
            last_seq = self.state_file.open()
        self.machine = VipStateMachine(last_seq, self.run_id)
        if cfg.exec_command is not None:
            argv = parse_command(cfg.exec_command)
            self.hooks = HookRunner(argv, cfg.about(), cfg.exec_timeout)
            self.hooks.start()
        if cfg.socket_path is not None:
            self.server = TransitionServer(cfg.socket_path)
            self.server.start()

    def _observe(self, present: bool) -> None:
        assert self.machine is not None
        transition = self.machine.observe(present, self.clock.monotonic(), self.clock.wall())
        if transition is not None:
            self._deliver(transition)

    def _deliver(self, transition: Transition) -> None:
        self.transitions.append(transition)
        document = {**transition.to_dict(), **self.config.about()}
        if self.state_file is not None:
            self.state_file.write(transition)
        if self.server is not None:
            self.server.publish(document)
        if self.hooks is not None:
            self.hooks.submit(transition)
        if self.out is not None:
            self.out.write(json.dumps(document, sort_keys=True) + "\n")
            self.out.flush()
        LOG.info("seq %d: %s", transition.seq, transition.state.value)

    def _close_outputs(self) -> None:
        if self.server is not None:
            self.server.close()
        if self.hooks is not None:
            self.hooks.stop(HOOK_STOP_WAIT)
        if self.state_file is not None:
            self.state_file.close()
        os.close(self._wake_r)
        os.close(self._wake_w)


def run_monitor(config: MonitorConfig, out: TextIO | None = None) -> int:
    """The ``l3ha ha monitor`` command: enter the namespace, watch until SIGTERM/SIGINT."""
    if config.netns is not None:
        enter_netns(config.netns)
    monitor = Monitor(config, out=out if out is not None else sys.stdout)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        monitor.stop()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        monitor.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
