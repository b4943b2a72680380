"""The executor: the one place in l3ha that changes the cloud. Package only (no I/O here).

``Executor(cloud, journal, clock, options).run(plan, kind)`` runs a plan within
budgets (concurrency, per-target in-flight, token-bucket rate), re-checks the
source before each move (from one list of agents that the moves in flight
share), records every step in the journal, falls back, rolls back, and waits
for ports (many routers per API call); retrying a call is the cloud's job.
Its ``change_agent`` (and the DHCP executor's) sets an agent's admin state or
description the same way (journalled, read back, dry run); ``recover`` finishes an operation a crash
interrupted, from the cloud's actual state.
"""

from l3ha.executor.agents import AgentChange, AgentChangeOutcome, AgentChangeResult
from l3ha.executor.candidates import FallbackTargets, snapshot_candidates
from l3ha.executor.options import ExecutorOptions
from l3ha.executor.outcome import MoveOutcome, MoveResult, Progress, RunResult
from l3ha.executor.ratelimit import TargetSlots, TokenBucket
from l3ha.executor.recovery import RecoveryAction, RecoveryResult, recover
from l3ha.executor.runner import Executor

__all__ = [
    "AgentChange",
    "AgentChangeOutcome",
    "AgentChangeResult",
    "Executor",
    "ExecutorOptions",
    "FallbackTargets",
    "MoveOutcome",
    "MoveResult",
    "Progress",
    "RecoveryAction",
    "RecoveryResult",
    "RunResult",
    "TargetSlots",
    "TokenBucket",
    "recover",
    "snapshot_candidates",
]
