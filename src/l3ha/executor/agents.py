"""Changes to an agent itself (admin state, description). I/O: cloud, journal.

Drain disables an agent and marks it; undrain enables it and clears the mark.
Those writes go through here, like every router move goes through the
runner: the intent is journalled (fsynced) before the first write, the
adapter reads each write back, the outcome is recorded, and a dry run
writes nothing and reports what it would do.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from l3ha.clock import Clock
from l3ha.cloud.base import Cloud
from l3ha.errors import L3haError
from l3ha.executor.lifecycle import require_journal
from l3ha.journal import Journal, OperationStatus
from l3ha.model import Agent

log = logging.getLogger(__name__)

#: The journal's operation kind of an agent change.
AGENT_CHANGE_KIND = "agent-state"


class AgentChangeOutcome(StrEnum):
    """How one agent change ended."""

    PLANNED = "planned"  # dry run: nothing written
    DONE = "done"  # written and read back
    UNCHANGED = "unchanged"  # the agent already was as asked
    FAILED = "failed"  # refused or not read back as asked (see detail)


@dataclass(frozen=True, slots=True)
class AgentChange:
    """Set an agent's admin state and/or description, with the reason an operator reads.

    ``None`` leaves a field as it is. ``host`` is for messages only.
    """

    agent_id: str
    host: str
    reason: str
    admin_state_up: bool | None = None
    description: str | None = None

    def as_args(self) -> dict[str, object]:
        return {
            "agent": self.agent_id,
            "host": self.host,
            "admin_state_up": self.admin_state_up,
            "description": self.description,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class AgentChangeResult:
    """The outcome of one ``AgentChange``."""

    change: AgentChange
    outcome: AgentChangeOutcome
    detail: str = ""
    operation_id: int | None = None

    @property
    def ok(self) -> bool:
        return self.outcome is not AgentChangeOutcome.FAILED


def change_agent(
    cloud: Cloud,
    journal: Journal | None,
    clock: Clock,
    change: AgentChange,
    *,
    dry_run: bool,
    current: Agent | None = None,
) -> AgentChangeResult:
    """Apply ``change`` (see the module docstring); never raises a cloud error.

    ``current``: the agent as the caller last saw it, so a change that changes
    nothing is reported ``unchanged`` without a write.
    """

    def write(admin: bool | None, description: str | None) -> None:
        if admin is not None:
            cloud.set_admin_state(change.agent_id, admin)
        if description is not None:
            cloud.set_description(change.agent_id, description)

    return journalled_change(
        journal, clock, AGENT_CHANGE_KIND, change, write, current=current, dry_run=dry_run
    )


def journalled_change(
    journal: Journal | None,
    clock: Clock,
    kind: str,
    change: AgentChange,
    write: Callable[[bool | None, str | None], None],
    *,
    current: Agent | None,
    dry_run: bool,
    label: str = "agent",
) -> AgentChangeResult:
    """An agent change of any kind. What ``change`` sets that ``current`` (the agent as last
    seen; None: not known) does not have yet is written: ``write(admin_state_up,
    description)``, None leaving a field as it is. Nothing to write: unchanged; a dry run:
    planned; else the write (the cloud calls, each read back) inside a journal operation
    of ``kind``: begun before the write, finished FAILED on a cloud error (the result says
    so, nothing raises), DONE otherwise, abandoned on anything else."""
    admin, description = change.admin_state_up, change.description
    if current is not None:
        admin = None if admin == current.admin_state_up else admin
        description = None if description == current.description else description
    if admin is None and description is None:
        return AgentChangeResult(change, AgentChangeOutcome.UNCHANGED, "already so")
    if dry_run:
        return AgentChangeResult(change, AgentChangeOutcome.PLANNED, change.reason)
    journal = require_journal(journal)
    started = clock.monotonic()
    op_id, _ = journal.begin_operation(kind, change.as_args())
    try:
        write(admin, description)
    except L3haError as exc:
        log.error("changing %s %s failed: %s", label, change.host, exc)
        _finish(journal, op_id, OperationStatus.FAILED, str(exc), clock.monotonic() - started)
        return AgentChangeResult(change, AgentChangeOutcome.FAILED, str(exc), op_id)
    except BaseException:
        journal.abandon(op_id)
        raise
    _finish(journal, op_id, OperationStatus.DONE, change.reason, clock.monotonic() - started)
    return AgentChangeResult(change, AgentChangeOutcome.DONE, change.reason, op_id)


def _finish(
    journal: Journal, op_id: int, status: OperationStatus, detail: str, seconds: float
) -> None:
    summary = json.dumps({"detail": detail, "seconds": round(seconds, 3)})
    journal.finish_operation(op_id, status, summary)
