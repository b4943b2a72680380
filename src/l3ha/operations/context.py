"""What every operation runs over: the cloud, the journal, the clock, and where it reports.

I/O: none itself; it holds the handles the operations use. ``observe``
reads the world an operation plans on; it defaults to a fresh snapshot of
the cloud, and the watch daemon hands in its own (a snapshot in which each
agent's ``alive`` is l3ha's own verdict, not the server's flag).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from l3ha.clock import Clock
from l3ha.cloud.base import Cloud
from l3ha.executor import Executor, ExecutorOptions, Progress
from l3ha.journal import Journal
from l3ha.model import Snapshot

log = logging.getLogger("l3ha.operations")

Notify = Callable[[str], None]


def log_notice(text: str) -> None:
    """The default notice sink: the log."""
    log.info("%s", text)


@dataclass
class OperationContext:
    """The handles one operation uses.

    ``journal`` may be ``None`` only for a dry run (a dry run creates no
    journal). ``notify`` receives one-line notices for the operator (the CLI
    prints them on stderr, the daemon logs them); ``progress`` is called after
    each move finishes.
    """

    cloud: Cloud
    journal: Journal | None
    clock: Clock
    notify: Notify = log_notice
    progress: Callable[[Progress], None] | None = None
    observer: Callable[[bool], Snapshot] | None = None
    should_stop: Callable[[], bool] | None = None

    def observe(self, with_ha_state: bool = False) -> Snapshot:
        """The world to plan on (see the module docstring)."""
        if self.observer is not None:
            return self.observer(with_ha_state)
        return self.cloud.read_snapshot(with_ha_state=with_ha_state)

    def executor(self, options: ExecutorOptions) -> Executor:
        return Executor(self.cloud, self.journal, self.clock, options)
