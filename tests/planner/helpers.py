"""Small builders for planner tests: agents, routers, snapshots, load counts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from l3ha.model import Agent, AgentMode, Binding, HAState, Plan, Router, Snapshot
from l3ha.planner import PlacementPolicy
from l3ha.weights import BUSY_TAG, WeightPolicy

WEIGHTS = WeightPolicy()
POLICY = PlacementPolicy()


def agent(
    agent_id: str,
    *,
    az: str = "az1",
    mode: AgentMode = AgentMode.LEGACY,
    alive: bool = True,
    up: bool = True,
) -> Agent:
    """An L3 agent whose host name is ``host-<id>``."""
    return Agent(
        id=agent_id,
        host=f"host-{agent_id}",
        availability_zone=az,
        mode=mode,
        alive=alive,
        admin_state_up=up,
    )


def router(
    router_id: str,
    *,
    ha: bool = False,
    dvr: bool = False,
    hints: tuple[str, ...] = (),
    tags: tuple[str, ...] = (),
    busy: bool = False,
    weight: int | None = None,
) -> Router:
    """A router; ``busy`` adds the busy tag, ``weight`` an ``l3ha:weight=N`` tag."""
    all_tags = list(tags)
    if busy:
        all_tags.append(BUSY_TAG)
    if weight is not None:
        all_tags.append(f"l3ha:weight={weight}")
    return Router(
        id=router_id,
        ha=ha,
        distributed=dvr,
        availability_zone_hints=hints,
        tags=tuple(all_tags),
    )


def snapshot(
    agents: Iterable[Agent],
    routers: Iterable[Router],
    placement: Mapping[str, str | Iterable[str]],
    active: Mapping[str, str] | None = None,
) -> Snapshot:
    """A snapshot; ``placement`` maps router id -> agent id (or several, for HA).

    HA replicas are standby except the one named in ``active`` (router -> agent).
    """
    routers = tuple(routers)
    by_id = {r.id: r for r in routers}
    bindings: list[Binding] = []
    for router_id, where in placement.items():
        hosts = [where] if isinstance(where, str) else list(where)
        for agent_id in hosts:
            state = None
            if by_id[router_id].ha:
                chosen = (active or {}).get(router_id)
                state = HAState.ACTIVE if chosen == agent_id else HAState.STANDBY
            bindings.append(Binding(router_id, agent_id, state))
    return Snapshot(tuple(agents), routers, tuple(bindings))


def many(prefix: str, count: int, **kwargs: object) -> list[Router]:
    """``count`` routers named ``<prefix>-000`` ... with the same attributes."""
    return [router(f"{prefix}-{i:03d}", **kwargs) for i in range(count)]  # type: ignore[arg-type]


def counts(snap: Snapshot) -> Counter[str]:
    """Bindings per agent id."""
    return Counter(b.agent_id for b in snap.bindings)


def busy_counts(snap: Snapshot, weights: WeightPolicy = WEIGHTS) -> Counter[str]:
    """Busy bindings per agent id."""
    return Counter(
        b.agent_id for b in snap.bindings if weights.is_busy(snap.routers_by_id[b.router_id])
    )


def targets_of(plan: Plan) -> dict[str, str]:
    """router id -> target agent of its (last) move with a target."""
    return {m.router_id: m.target for m in plan.moves if m.target is not None}


def as_plan(result: object) -> Plan:
    """Assert the planner returned a Plan (not a Halt) and return it."""
    assert isinstance(result, Plan), result
    return result
