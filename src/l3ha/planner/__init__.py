"""The placement planner: evacuate, drain, migrate, rebalance, repair. Pure.

Every function takes a ``Snapshot``, a ``PlacementPolicy`` and a
``WeightPolicy`` and returns a ``Plan`` (ordered moves, each with a reason)
or a ``Halt``. No I/O, no clock, no randomness: ties are broken by ids, so
the same input gives the same plan, and planning again on
``apply_plan(snapshot, plan)`` gives no moves. Evacuate and drain plans mark
their leading canary batch in ``Plan.canary``; rebalance plans carry the
fewest moves any balanced result needs in ``Plan.lower_bound``.
"""

from l3ha.planner.apply import apply_plan
from l3ha.planner.evacuate import plan_drain, plan_evacuate
from l3ha.planner.lowerbound import balance_bound, count_bound
from l3ha.planner.migrate import plan_migrate
from l3ha.planner.policy import PlacementPolicy
from l3ha.planner.rebalance import plan_rebalance
from l3ha.planner.repair import plan_repair

__all__ = [
    "PlacementPolicy",
    "apply_plan",
    "balance_bound",
    "count_bound",
    "plan_drain",
    "plan_evacuate",
    "plan_migrate",
    "plan_rebalance",
    "plan_repair",
]
