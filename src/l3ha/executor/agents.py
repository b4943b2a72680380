"""Changes to an agent itself (admin state, description). I/O: cloud, journal.

Drain disables an agent and marks it; undrain enables it and clears the mark.
Those writes go through an executor's ``change_agent`` (``AgentChanger``, which the
L3 and DHCP executors inherit, each giving only its write), as every move goes
through the dispatcher: the intent is journalled (fsynced) before the first write,
the cloud reads each write back, the outcome is recorded, and a dry run writes
nothing and reports what it would do.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from enum import StrEnum

from l3ha.clock import Clock
from l3ha.errors import L3haError
from l3ha.executor.lifecycle import require_journal
from l3ha.executor.options import ExecutorOptions
from l3ha.journal import Journal, OperationStatus
from l3ha.model import Agent

log = logging.getLogger(__name__)


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


class AgentChanger:
    """The agent changes of one kind's executor (see the module docstring). An executor
    whose kind's agents l3ha disables and enables inherits this beside ``ExecutorBase``
    and gives only its write (``write_agent``), the journal's operation kind of its
    changes and what its agents are called in the log."""

    journal: Journal | None
    clock: Clock
    options: ExecutorOptions
    agent_change_kind = "agent-state"
    agent_label = "agent"

    def write_agent(
        self, agent_id: str, admin_state_up: bool | None, description: str | None
    ) -> None:
        """Write what is not None, each write read back; raises the cloud's error."""
        raise NotImplementedError

    def change_agent(self, change: AgentChange, current: Agent | None = None) -> AgentChangeResult:
        """Apply ``change``; never raises a cloud error. What it sets that ``current`` (the
        agent as last seen; None: not known) does not have yet is written, so a change to
        what already is writes nothing (unchanged). A dry run writes nothing (planned).
        Else the write runs inside a journal operation: begun before the write, finished
        FAILED on a cloud error (the result says so), DONE otherwise, abandoned on anything
        else."""
        admin, description = change.admin_state_up, change.description
        if current is not None:
            admin = None if admin == current.admin_state_up else admin
            description = None if description == current.description else description
        if admin is None and description is None:
            return AgentChangeResult(change, AgentChangeOutcome.UNCHANGED, "already so")
        if self.options.dry_run:
            return AgentChangeResult(change, AgentChangeOutcome.PLANNED, change.reason)
        journal, clock = require_journal(self.journal), self.clock
        started = clock.monotonic()
        op_id, _ = journal.begin_operation(self.agent_change_kind, change.as_args())
        try:
            self.write_agent(change.agent_id, admin, description)
        except L3haError as exc:
            log.error("changing %s %s failed: %s", self.agent_label, change.host, exc)
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
