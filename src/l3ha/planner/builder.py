"""Accumulating one plan and the two basic steps: replace a binding, bind. Pure."""

from __future__ import annotations

from l3ha.model import Agent, Move, MoveKind, Plan, Router, Unplaceable
from l3ha.planner.targets import Targets


class PlanBuilder:
    """Accumulates moves, unplaceable routers and warnings of one plan."""

    def __init__(self) -> None:
        self.moves: list[Move] = []
        self.unplaceable: list[Unplaceable] = []
        self.warnings: list[str] = []
        self._warned: set[str] = set()

    def refuse(self, router_id: str, reason: str) -> None:
        self.unplaceable.append(Unplaceable(router_id, reason))

    def warn(self, text: str) -> None:
        if text and text not in self._warned:
            self._warned.add(text)
            self.warnings.append(text)

    def plan(self, action: str, canary: int = 0) -> Plan:
        """The plan accumulated, for ``action`` (its first ``canary`` moves the canary batch)."""
        moves, unplaceable = tuple(self.moves), tuple(self.unplaceable)
        return Plan(action, moves, unplaceable, tuple(self.warnings), canary=canary)


def replace_binding(
    router: Router,
    source: Agent,
    targets: Targets,
    out: PlanBuilder,
    why: str,
    *,
    drop_surplus: bool = False,
) -> None:
    """Move the router's binding off ``source`` (HA: replace the replica).

    ``drop_surplus`` (a drain): an HA router no agent can take another replica of,
    but with at least two replicas on usable agents besides ``source`` (what an
    interrupted replacement leaves), only loses its replica on ``source``.
    """
    choice = targets.choose(router, exclude=(source.id,))
    out.warn(choice.warning)
    if choice.target is None:
        others = _usable_replicas(router, source, targets)
        if drop_surplus and router.ha and len(others) >= 2:
            hosts = ", ".join(sorted(targets.by_id[a].host for a in others))
            note = f"{why}; already has replicas on {hosts}"
            out.moves.append(Move(router.id, MoveKind.REMOVE_REPLICA, None, source.id, note))
            targets.state.remove(router, source.id)
            return
        out.refuse(router.id, choice.reason)
        return
    host = targets.by_id[choice.target].host
    if router.ha:
        out.moves.append(
            Move(router.id, MoveKind.ADD_REPLICA, choice.target, source.id, f"{why}; new replica")
        )
        out.moves.append(
            Move(router.id, MoveKind.REMOVE_REPLICA, None, source.id, f"{why}; replaced on {host}")
        )
    else:
        out.moves.append(Move(router.id, MoveKind.MOVE, choice.target, source.id, why))
    targets.state.move(router, source.id, choice.target)


def _usable_replicas(router: Router, source: Agent, targets: Targets) -> list[str]:
    """The agents other than ``source`` that hold the router (in this plan) and are usable."""
    return [
        a
        for a in targets.state.agents_of(router.id)
        if a != source.id and a in targets.by_id and targets.by_id[a].usable
    ]


def bind_router(router: Router, targets: Targets, out: PlanBuilder, why: str) -> None:
    """Bind an unhosted router to the best target (or report it unplaceable)."""
    choice = targets.choose(router)
    out.warn(choice.warning)
    if choice.target is None:
        out.refuse(router.id, choice.reason)
        return
    out.moves.append(Move(router.id, MoveKind.BIND, choice.target, None, why))
    targets.state.add(router, choice.target)
