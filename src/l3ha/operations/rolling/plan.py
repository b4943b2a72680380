"""What a rolling maintenance run is asked to do, and its steps host by host. Pure.

A run takes hosts one at a time. For each host, every *participant* (the
agents of that host l3ha takes out of service and back: its L3 agent and,
when it has one, its DHCP agent) is drained, then the upgrade step runs once
(``UpgradeStep``: the maintenance command, a pause until the operator says
continue, or nothing in a rehearsal), then every participant proves itself
(stable heartbeat, a canary) and is restored. ``run_steps`` spells that out
as a flat, ordered list of ``StepKey`` so the journal can record each one
and ``--resume`` can continue from the first unfinished.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field
from enum import StrEnum

from l3ha.errors import BadInputError
from l3ha.executor.options import ExecutorOptions
from l3ha.health import HealthPolicy
from l3ha.operations.request import Executes, PlacementRequest
from l3ha.weights import WeightPolicy

HOST_PLACEHOLDER = "{host}"


class Phase(StrEnum):
    """The kinds of step, in the order they run for one host."""

    DRAIN = "drain"
    RUN = "run"
    PAUSE = "pause"
    STABLE = "stable"
    CANARY = "canary"
    RESTORE = "restore"


class UpgradeStep(StrEnum):
    """What happens to a drained host: ``--run COMMAND``, ``--pause`` or ``--no-run``."""

    RUN = "run"
    PAUSE = "pause"
    REHEARSAL = "no-run"

    @property
    def phase(self) -> Phase | None:
        """The host's own step between the drains and the proofs (None: a rehearsal)."""
        return {UpgradeStep.RUN: Phase.RUN, UpgradeStep.PAUSE: Phase.PAUSE}.get(self)


@dataclass(frozen=True, slots=True)
class StepKey:
    """One step: a phase of one participant on one host (``participant`` empty for RUN)."""

    host: str
    phase: Phase
    participant: str = ""

    @property
    def label(self) -> str:
        return f"{self.phase.value} {self.participant}".strip()


@dataclass(frozen=True)
class RollingRequest(Executes):
    """Everything ``l3ha rolling`` was asked (see ``l3ha rolling --help``)."""

    hosts: tuple[str, ...]
    upgrade: UpgradeStep = UpgradeStep.REHEARSAL
    command: str | None = None
    shell: bool = False
    run_timeout: float = 3600.0
    stable_for: float = 60.0
    stable_timeout: float | None = None
    poll_interval: float = 1.0
    canary: str | None = None
    canary_timeout: float = 120.0
    max_outage: float | None = None
    rebalance_after: bool = False
    health: HealthPolicy = field(default_factory=HealthPolicy)
    execution: ExecutorOptions = field(default_factory=ExecutorOptions)
    placement: PlacementRequest = field(default_factory=PlacementRequest)
    weights: WeightPolicy = field(default_factory=WeightPolicy)

    def __post_init__(self) -> None:
        if not self.hosts:
            raise BadInputError("--hosts names no host")
        dupes = sorted({h for h in self.hosts if self.hosts.count(h) > 1})
        if dupes:
            raise BadInputError(f"--hosts names {', '.join(dupes)} more than once")
        for name in ("run_timeout", "stable_for", "poll_interval", "canary_timeout"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise BadInputError(f"{name.replace('_', '-')} must be > 0 seconds, not {value}")
        if (self.command is not None) != (self.upgrade is UpgradeStep.RUN):
            raise BadInputError("a command goes with --run, and --run with a command")
        if self.command is not None:
            command_argv(self.command, "example-host", self.shell)  # malformed: fail now

    @property
    def stable_deadline(self) -> float:
        """How long to wait for the agent to prove stable: ``--stable-timeout``, else
        ``--stable-for`` plus two ``agent_down_time``."""
        if self.stable_timeout is not None:
            return self.stable_timeout
        return self.stable_for + 2 * self.health.agent_down_time


def command_argv(template: str, host: str, shell: bool) -> list[str]:
    """The argv of ``--run`` for one host: split with shell-like quoting, then ``{host}``
    substituted in each word (a host name can never split or inject a word); with
    ``shell``, the whole text goes to ``/bin/sh -c`` with the host quoted."""
    if shell:
        return ["/bin/sh", "-c", template.replace(HOST_PLACEHOLDER, shlex.quote(host))]
    try:
        words = shlex.split(template)
    except ValueError as exc:
        raise BadInputError(f"--run {template!r} cannot be split: {exc}") from None
    if not words:
        raise BadInputError("--run is empty")
    return [word.replace(HOST_PLACEHOLDER, host) for word in words]


def host_steps(host: str, participants: tuple[str, ...], upgrade: UpgradeStep) -> list[StepKey]:
    """The ordered steps of one host (see the module docstring)."""
    steps = [StepKey(host, Phase.DRAIN, p) for p in participants]
    if upgrade.phase is not None:
        steps.append(StepKey(host, upgrade.phase))
    for phase in (Phase.STABLE, Phase.CANARY, Phase.RESTORE):
        steps += [StepKey(host, phase, p) for p in participants]
    return steps


def run_steps(hosts: list[tuple[str, tuple[str, ...]]], upgrade: UpgradeStep) -> list[StepKey]:
    """Every step of the run, host after host; ``hosts``: each host and its participants."""
    return [s for host, participants in hosts for s in host_steps(host, participants, upgrade)]
