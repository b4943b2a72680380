"""The agents as the executor last read them, shared by every move of a run. I/O: the cloud.

Moves in flight need to know, again and again, whether their source is back
(rule 5) and whether a target can take a router. Asking Neutron once per move
and agent costs two calls a move; ``AgentView`` instead lists the L3 agents
in one call and answers from that list until it is ``max_age`` seconds old
(on the injected clock), so one read serves every move in flight in that
period. The read happens under a lock: threads that need a fresh list while
one is being read wait for it instead of reading again. ``refresh`` reads
now (after the canary batch). ``max_age`` 0 reads on every question.
"""

from __future__ import annotations

import threading

from l3ha.clock import Clock
from l3ha.cloud.base import Cloud
from l3ha.model import Agent


class AgentView:
    """One shared, briefly cached list of the L3 agents (see the module docstring)."""

    def __init__(self, cloud: Cloud, clock: Clock, max_age: float) -> None:
        self._cloud = cloud
        self._clock = clock
        self._max_age = max_age
        self._agents: dict[str, Agent] = {}
        self._read_at: float | None = None
        self._lock = threading.Lock()

    def get(self, agent_id: str) -> Agent | None:
        """The agent as of a read at most ``max_age`` s old; ``None`` when it does not exist."""
        with self._lock:
            now = self._clock.monotonic()
            if self._read_at is None or now - self._read_at >= self._max_age:
                self._read_locked()
            return self._agents.get(agent_id)

    def refresh(self) -> None:
        """Read the agents now."""
        with self._lock:
            self._read_locked()

    def _read_locked(self) -> None:
        started = self._clock.monotonic()
        self._agents = {a.id: a for a in self._cloud.list_agents()}
        self._read_at = started
