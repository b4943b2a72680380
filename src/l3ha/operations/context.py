"""What every operation runs over: the cloud, the journal, the clock, and where it reports.

I/O: none itself but ``agent_of_another_kind``'s one read; it holds the handles
the operations use (``OperationContext`` for routers, ``KindContext`` the same
handles for any other kind, over its cloud and snapshot types), and what
operations of every kind share: the journal
arguments of an operation (``operation_args``) and the agent changes of a drain
and an undrain (``drain_change``, ``undrain_change``), and the check that what a run
reported moved off an agent is gone from it (``still_on_source``). ``observe``
reads the world an operation plans on; it defaults to a fresh snapshot of
the cloud, and the watch daemon hands in its own (a snapshot in which each
agent's ``alive`` is l3ha's own verdict, not the server's flag).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, Protocol, TypeVar

from l3ha.clock import Clock
from l3ha.cloud.base import Cloud
from l3ha.errors import L3haError, NotFoundError
from l3ha.executor import AgentChange, Executor, ExecutorOptions, Progress
from l3ha.journal import Journal
from l3ha.journal.history import NAMES
from l3ha.model import Agent, Snapshot
from l3ha.operations.request import DRAIN_MARK

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


C = TypeVar("C")
S = TypeVar("S")


@dataclass
class KindContext(Generic[C, S]):
    """The handles an action of a kind other than routers uses (as ``OperationContext``):
    its cloud, the journal, the clock, where notices go; ``observer`` replaces the fresh
    read (``read``, the kind's own) of the world to plan on (the daemon hands in its own)."""

    cloud: C
    journal: Journal | None
    clock: Clock
    notify: Notify = log_notice
    observer: Callable[[], S] | None = None
    should_stop: Callable[[], bool] | None = None

    def observe(self) -> S:
        return self.observer() if self.observer is not None else self.read()

    def read(self) -> S:
        raise NotImplementedError


class Asked(Protocol):
    """A request of any kind, as the journal records it."""

    @property
    def action(self) -> StrEnum: ...
    @property
    def agent(self) -> str | None: ...
    @property
    def journal_args(self) -> tuple[tuple[str, str], ...]: ...


def operation_args(request: Asked, names: Mapping[str, str]) -> dict[str, object]:
    """What the journal records with an operation of any kind: the command, its agent,
    who asked (``journal_args``) and the names it saw (host and object names by id)."""
    return {
        "command": request.action.value,
        "agent": request.agent,
        **dict(request.journal_args),
        NAMES: dict(names),
    }


def drain_change(agent: Agent, observed_at: str, reason: str) -> AgentChange:
    """What a drain of any kind does to its agent at the end: disable it and mark it
    drained (with when the drain saw the cloud)."""
    return AgentChange(
        agent.id,
        agent.host,
        reason,
        admin_state_up=False,
        description=f"{DRAIN_MARK} {observed_at}".strip(),
    )


def undrain_change(agent: Agent, reason: str) -> AgentChange:
    """What an undrain of any kind does to its agent: enable it and clear l3ha's drain
    mark (only that mark: a description someone else wrote stays)."""
    return AgentChange(
        agent.id,
        agent.host,
        reason,
        admin_state_up=True,
        description="" if agent.description.startswith(DRAIN_MARK) else None,
    )


def still_on_source(
    notify: Notify, noun: str, moved: Collection[str], now_on: Iterable[str], host: str
) -> list[str]:
    """Verify a run of any kind: the objects reported moved off ``host`` that are still on
    it (``now_on``), sorted, each named in a notice."""
    still = sorted(object_id for object_id in now_on if object_id in moved)
    for object_id in still:
        notify(f"{noun} {object_id} was reported moved but is still on {host}")
    return still


def agent_of_another_kind(
    ctx: OperationContext, ref: str | None, action: str
) -> NotFoundError | None:
    """When ``ref`` (an agent the L3 snapshot does not know) is an agent of another kind (a
    DHCP agent), the error that says so and names the command for it; else None."""
    if not ref:
        return None
    try:
        ctx.cloud.get_agent(ref)
    except NotFoundError as exc:
        if " is a " not in str(exc):  # no agent at all by that id
            return None
        hint = f"; for its networks: 'l3ha dhcp {action} {ref}'" if "DHCP" in str(exc) else ""
        return NotFoundError(f"{exc}{hint}")
    except L3haError:
        return None
    return None
