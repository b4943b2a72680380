"""Executor options (concurrency, budgets, retries, waiting). Pure."""

from __future__ import annotations

import math
from dataclasses import dataclass

from l3ha.errors import BadInputError


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
    of each target (``None``: all of them). ``retries``: extra attempts of a retryable API
    error, sleeping ``backoff * backoff_factor**n`` (at most
    ``backoff_max``). ``salvage_patience``: after an unexpected error in the
    middle of a move, seconds spent trying to read the router's bindings and
    re-bind it before reporting it. ``dry_run``: write nothing, report the plan.
    """

    concurrency: int = 8
    per_target_inflight: int | None = 16
    rate: float | None = None
    burst: int | None = None
    wait_ports: bool = True
    port_timeout: float = 300.0
    port_poll_interval: float = 1.0
    port_pollers: int = 4
    port_poll_window: int | None = 8
    retries: int = 3
    backoff: float = 0.5
    backoff_factor: float = 2.0
    backoff_max: float = 10.0
    salvage_patience: float = 30.0
    dry_run: bool = False

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
        if self.port_poll_interval <= 0 or self.port_pollers < 1:
            raise BadInputError("port polling needs a positive interval and at least one poller")
        if self.retries < 0 or self.backoff < 0 or self.backoff_factor < 1:
            raise BadInputError("retries and backoff must not be negative")
        if self.salvage_patience < 0:
            raise BadInputError("the salvage patience must not be negative")

    @property
    def bucket_burst(self) -> int:
        """The token bucket's size: ``burst`` when given, else ``max(1, ceil(rate))``."""
        if self.burst is not None:
            return self.burst
        return max(1, math.ceil(self.rate)) if self.rate is not None else 1

    def backoff_delay(self, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        return float(min(self.backoff_max, self.backoff * self.backoff_factor ** (attempt - 1)))
