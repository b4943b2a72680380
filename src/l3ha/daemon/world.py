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
        self.force_full = True

    def refresh(self, agents: Sequence[Agent], changed: Collection[str]) -> Snapshot:
        """The snapshot for this cycle, given fresh ``agents`` and the agents whose
        verdict ``changed``; a full read when one is due."""
        self._cycles_since_full += 1
        if self.snapshot is None or self.force_full or self._cycles_since_full >= self.full_resync:
            return self.full_read()
        current = {a.id for a in agents}
        new = current - set(self.snapshot.agents_by_id)
        stale = (set(changed) | new) & current
        bindings = self._bindings_reading(self.snapshot, stale, keep=current)
        self.snapshot = Snapshot(tuple(agents), self.snapshot.routers, bindings, _now_iso())
        return self.snapshot

    def reread(self, agent_ids: Collection[str]) -> None:
        """Read these agents' bindings again now (after an operation moved routers)."""
        if self.snapshot is None or not agent_ids:
            return
        known = set(self.snapshot.agents_by_id)
        bindings = self._bindings_reading(self.snapshot, set(agent_ids) & known, keep=known)
        self.snapshot = replace(self.snapshot, bindings=bindings)

    def _bindings_reading(
        self, snapshot: Snapshot, fresh: set[str], keep: set[str]
    ) -> tuple[Binding, ...]:
        """``snapshot``'s bindings of the ``keep`` agents, those of ``fresh`` read anew."""
        bindings = [b for b in snapshot.bindings if b.agent_id in keep and b.agent_id not in fresh]
        for agent_id in sorted(fresh):
            bindings.extend(self.cloud.routers_on_agent(agent_id))
        return tuple(dict.fromkeys(bindings))

    def full_read(self) -> Snapshot:
        """Everything, fresh."""
        self.snapshot = self.cloud.read_snapshot()
        self._cycles_since_full = 0
        self.force_full = False
        return self.snapshot


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
