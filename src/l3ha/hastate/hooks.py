"""Runs the ``--exec`` hook per transition, serially, newest first. I/O: subprocesses, a thread.

keepalived's notify scripts ran concurrently, so "backup" could finish after
"master". Here one worker thread runs hooks one at a time; when transitions
arrive while a hook runs, only the newest is run next and the older ones are
skipped (``HookQueue`` decides, purely). The hook gets the state and sequence
number as its last two arguments and in ``L3HA_*`` environment variables.
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
import threading
from typing import Any

from l3ha.errors import BadInputError
from l3ha.hastate.vipstate import HookQueue, Transition

LOG = logging.getLogger(__name__)


def parse_command(command: str) -> list[str]:
    """Split a hook command line; a malformed or empty one is a BadInputError."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise BadInputError(f"invalid --exec command {command!r}: {exc}") from exc
    if not argv:
        raise BadInputError("--exec command is empty")
    return argv


def hook_environment(transition: Transition, about: dict[str, Any]) -> dict[str, str]:
    """The ``L3HA_*`` variables a hook sees."""
    env = {f"L3HA_{k.upper()}": str(v) for k, v in about.items() if v is not None}
    env.update(
        L3HA_STATE=transition.state.value,
        L3HA_PREVIOUS=transition.previous.value if transition.previous else "",
        L3HA_SEQ=str(transition.seq),
        L3HA_MONOTONIC=f"{transition.monotonic:.6f}",
        L3HA_WALL=transition.wall.isoformat(),
        L3HA_RUN=transition.run,
    )
    return env


class HookRunner:
    """The one thread that runs hooks."""

    def __init__(self, argv: list[str], about: dict[str, Any], timeout: float = 60.0) -> None:
        self.argv = argv
        self.about = about
        self.timeout = timeout
        self.queue = HookQueue()
        self.skipped: list[int] = []
        self.completed: list[int] = []
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="hook-runner", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def submit(self, transition: Transition) -> None:
        """A new transition: its hook runs when the current one (if any) ends, unless superseded."""
        with self._cond:
            self.queue.offer(transition)
            self._cond.notify()

    def _next(self) -> Transition | None:
        with self._cond:
            while True:
                transition, skipped = self.queue.take()
                if skipped:
                    self.skipped.extend(skipped)
                    LOG.info("hooks skipped for superseded transitions %s", skipped)
                if transition is not None or self._stopping:
                    return transition
                self._cond.wait()

    def _loop(self) -> None:
        while True:
            transition = self._next()
            if transition is None:
                return
            self._run(transition)
            with self._cond:
                self.queue.finish()
                self.completed.append(transition.seq)
                self._cond.notify_all()

    def _run(self, transition: Transition) -> None:
        argv = [*self.argv, transition.state.value, str(transition.seq)]
        env = {**os.environ, **hook_environment(transition, self.about)}
        try:
            result = subprocess.run(argv, env=env, timeout=self.timeout, check=False)
        except subprocess.TimeoutExpired:
            LOG.warning("hook for seq %d killed after %.0f s", transition.seq, self.timeout)
            return
        except OSError as exc:
            LOG.warning("hook for seq %d could not start: %s", transition.seq, exc)
            return
        if result.returncode != 0:
            LOG.warning("hook for seq %d exited %d", transition.seq, result.returncode)

    def stop(self, wait: float) -> None:
        """Run no new hooks; wait up to ``wait`` s for the one running to end."""
        with self._cond:
            self._stopping = True
            self.queue.pending.clear()
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout=wait)
