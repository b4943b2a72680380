"""The world after a plan: apply its moves to a snapshot's bindings. Pure.

Used by the tests (planning again on the result gives nothing). New HA
replicas start as ``standby``. A move that does not fit the snapshot (its
source binding is missing, or its target already hosts the router) raises
``BadInputError``.
"""

from __future__ import annotations

from dataclasses import replace

from l3ha.errors import BadInputError
from l3ha.model import Binding, HAState, Move, MoveKind, Plan, Snapshot

_Key = tuple[str, str]


def apply_plan(snapshot: Snapshot, plan: Plan) -> Snapshot:
    """The snapshot as it will be once every move of ``plan`` has been made."""
    bindings: dict[_Key, Binding] = {(b.router_id, b.agent_id): b for b in snapshot.bindings}
    for move in plan.moves:
        _apply_move(bindings, move)
    return replace(snapshot, bindings=tuple(bindings.values()))


def _apply_move(bindings: dict[_Key, Binding], move: Move) -> None:
    if move.kind in (MoveKind.MOVE, MoveKind.REMOVE_REPLICA):
        old = bindings.pop((move.router_id, _required(move.source, move)), None)
        if old is None:
            raise BadInputError(
                f"plan does not fit the snapshot: router {move.router_id} "
                f"is not bound to {move.source}"
            )
    if move.kind == MoveKind.REMOVE_REPLICA:
        return
    target = _required(move.target, move)
    state = HAState.STANDBY if move.kind == MoveKind.ADD_REPLICA else None
    if (move.router_id, target) in bindings:
        raise BadInputError(
            f"plan does not fit the snapshot: router {move.router_id} is already bound to {target}"
        )
    bindings[(move.router_id, target)] = Binding(move.router_id, target, state)


def _required(agent_id: str | None, move: Move) -> str:
    if agent_id is None:
        raise BadInputError(f"plan move {move.kind} of router {move.router_id} lacks an agent")
    return agent_id
