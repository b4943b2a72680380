"""Executor options (concurrency, budgets, re-check period, waiting, agents judged dead).
Pure."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from l3ha.errors import BadInputError
from l3ha.model import Agent


@dataclass(frozen=True)
class ExecutorOptions:
    """How the executor runs a plan.

    ``concurrency``: moves written at the same time (worker threads).
    ``per_target_inflight``: moves per target agent not yet finished (written
    and, when waiting, ports not yet ACTIVE); ``None`` for no limit.
    ``rate``/``burst``: token bucket of moves started per second (``rate``
    ``None``: unlimited); ``burst`` ``None`` (the default) means
    ``max(1, ceil(rate))``, so ``--rate 1`` starts one move, not ten, at once.
    ``wait_ports``: wait for the router's ports to be ACTIVE on
    the target, up to ``port_timeout`` seconds, polling every
    ``port_poll_interval`` the ``port_poll_window`` longest-waiting routers
    of each target (``None``: all of them), many routers per API call.
    ``agent_recheck_interval``: how old the run's shared list of agents may be
    when a move asks whether its source is back or a target can take a router
    (one ``GET /agents`` serves every move in flight for that long; 0: read
    for every question). Retrying API calls is the cloud adapter's job, not
    the executor's. ``salvage_patience``: after an unexpected error in the
    middle of a move, seconds spent trying to read the router's bindings and
    re-bind it before reporting it, pausing ``backoff * backoff_factor**n``
    (at most ``backoff_max``) between rounds. ``dry_run``: write nothing,
    report the plan. ``judged_dead``: agents the caller judged dead (agent id -> the
    heartbeat value it judged on; the watch's verdicts): a re-check reads such an agent as
    dead while its heartbeat is still that value, whatever the server's slower ``alive``
    flag says (safety rule 7); once the value changes it reads as the server reports it.
    """

    concurrency: int = 8
    per_target_inflight: int | None = 16
    rate: float | None = None
    burst: int | None = None
    wait_ports: bool = True
    port_timeout: float = 300.0
    port_poll_interval: float = 0.5
    port_poll_window: int | None = 8
    agent_recheck_interval: float = 1.0
    backoff: float = 0.5
    backoff_factor: float = 2.0
    backoff_max: float = 10.0
    salvage_patience: float = 30.0
    dry_run: bool = False
    judged_dead: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise BadInputError(f"--concurrency must be at least 1, not {self.concurrency}")
        if self.per_target_inflight is not None and self.per_target_inflight < 1:
            raise BadInputError("the per-target in-flight limit must be at least 1")
        if self.rate is not None and self.rate <= 0:
            raise BadInputError(f"--rate must be positive, not {self.rate}")
        if self.burst is not None and self.burst < 1:
            raise BadInputError(f"burst must be at least 1, not {self.burst}")
        if self.port_timeout < 0:
            raise BadInputError(f"--port-timeout must not be negative, not {self.port_timeout}")
        if self.port_poll_window is not None and self.port_poll_window < 1:
            raise BadInputError("the port poll window must be at least 1")
        if self.port_poll_interval <= 0:
            raise BadInputError("port polling needs a positive interval")
        if self.agent_recheck_interval < 0:
            raise BadInputError("the agent re-check interval must not be negative")
        if self.backoff < 0 or self.backoff_factor < 1:
            raise BadInputError("the salvage backoff must not be negative")
        if self.salvage_patience < 0:
            raise BadInputError("the salvage patience must not be negative")

    @property
    def bucket_burst(self) -> int:
        """The token bucket's size: ``burst`` when given, else ``max(1, ceil(rate))``."""
        if self.burst is not None:
            return self.burst
        return max(1, math.ceil(self.rate)) if self.rate is not None else 1

    def backoff_delay(self, attempt: int) -> float:
        """Seconds between salvage round ``attempt`` (1-based) and the next."""
        return float(min(self.backoff_max, self.backoff * self.backoff_factor ** (attempt - 1)))

    def usable(self, agent: Agent | None) -> bool:
        """Whether a re-check finds ``agent`` usable (alive and enabled), with the caller's
        verdicts applied (``judged_dead``): the one test every kind's re-check makes."""
        if agent is None or not agent.usable:
            return False
        return self.judged_dead.get(agent.id) != agent.heartbeat_timestamp
