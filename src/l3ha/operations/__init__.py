"""Operations: one function per action (gate, plan, execute, verify). Package only (no I/O here).

The command line, the watch daemon and rolling maintenance call these and
nothing else to change the cloud: ``run_action(ctx, request)`` with an
``OperationContext`` (cloud, journal, clock, notices) and an
``ActionRequest`` returns an ``ActionResult``. ``make_plan`` is the same
planning step, for ``l3ha plan`` offline.
"""

from l3ha.operations.actions import resume, run_action
from l3ha.operations.context import OperationContext
from l3ha.operations.interrupted import finish_interrupted
from l3ha.operations.planning import make_plan
from l3ha.operations.request import (
    DRAIN_MARK,
    PLANNABLE,
    Action,
    ActionRequest,
    ActionResult,
    AgentChanged,
    Executed,
    PlacementRequest,
)

__all__ = [
    "DRAIN_MARK",
    "PLANNABLE",
    "Action",
    "ActionRequest",
    "ActionResult",
    "AgentChanged",
    "Executed",
    "OperationContext",
    "PlacementRequest",
    "finish_interrupted",
    "make_plan",
    "resume",
    "run_action",
]
