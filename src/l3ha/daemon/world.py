"""The daemon's picture of the cloud, kept up to date cheaply. I/O: reads the cloud.

A quiet cycle costs one ``GET /v2.0/agents``: the heartbeats. Bindings are
read in full (every agent's routers, and the router list) at start, on
gaining leadership and every ``full_resync`` cycles; in between, only the
agents whose verdict changed, that an operation touched, or that are new are
read again. Routers created between two full reads are seen at the next one.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from datetime import UTC, datetime

from l3ha.cloud.base import Cloud
from l3ha.model import Agent, Binding, Snapshot


class WorldCache:
    """The last snapshot, refreshed agent by agent (see the module docstring)."""

    def __init__(self, cloud: Cloud, full_resync: int) -> None:
        self.cloud = cloud
        self.full_resync = max(1, full_resync)
        self.snapshot: Snapshot | None = None
        self._cycles_since_full = 0
        self._dirty: set[str] = set()
        self.force_full = True

    def mark_dirty(self, agent_ids: Collection[str]) -> None:
        """Read these agents' bindings again next time (an operation touched them)."""
        self._dirty.update(a for a in agent_ids if a)

    def read_agents(self) -> list[Agent]:
        """The heartbeats: one call."""
        return self.cloud.list_agents()

    def refresh(self, agents: Sequence[Agent], changed: Collection[str]) -> Snapshot:
        """The snapshot for this cycle, given fresh ``agents`` and the agents whose
        verdict ``changed``; a full read when one is due."""
        self._cycles_since_full += 1
        if self.snapshot is None or self.force_full or self._cycles_since_full >= self.full_resync:
            return self.full_read()
        known = self.snapshot.agents_by_id
        stale = (set(changed) | self._dirty | {a.id for a in agents if a.id not in known}) & {
            a.id for a in agents
        }
        self._dirty.clear()
        current = {a.id for a in agents}
        bindings = [
            b for b in self.snapshot.bindings if b.agent_id in current and b.agent_id not in stale
        ]
        for agent_id in sorted(stale):
            bindings.extend(self.cloud.routers_on_agent(agent_id))
        self.snapshot = Snapshot(
            tuple(agents), self.snapshot.routers, _deduplicated(bindings), _now_iso()
        )
        return self.snapshot

    def reread(self, agent_ids: Collection[str]) -> None:
        """Read these agents' bindings again now (after an operation moved routers)."""
        if self.snapshot is None or not agent_ids:
            return
        fresh = {a for a in agent_ids if a in self.snapshot.agents_by_id}
        bindings = [b for b in self.snapshot.bindings if b.agent_id not in fresh]
        for agent_id in sorted(fresh):
            bindings.extend(self.cloud.routers_on_agent(agent_id))
        self.snapshot = replace(self.snapshot, bindings=_deduplicated(bindings))

    def full_read(self) -> Snapshot:
        """Everything, fresh."""
        self.snapshot = self.cloud.read_snapshot()
        self._cycles_since_full = 0
        self._dirty.clear()
        self.force_full = False
        return self.snapshot

    def with_agents(self, agents: Sequence[Agent]) -> Snapshot | None:
        """The cached snapshot with fresher agents (no binding read)."""
        if self.snapshot is None:
            return None
        return replace(self.snapshot, agents=tuple(agents))


def _deduplicated(bindings: list[Binding]) -> tuple[Binding, ...]:
    return tuple(dict.fromkeys(bindings))


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
