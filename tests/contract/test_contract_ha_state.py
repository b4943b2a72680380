"""Contract: how ``ha_state`` on l3-agents reads when hosting agents die.

Rows of NEUTRON.md "HA": replicas report active/standby; the server rewrites the
state of dead (or disabled) hosting agents when l3-agents is read.
"""

from __future__ import annotations

from typing import Any

from tests.contract.contract_http import Api


def ha_states(api: Api, router: str) -> dict[str, str]:
    reply = api.get(f"/v2.0/routers/{router}/l3-agents")
    return {agent["id"]: agent["ha_state"] for agent in reply.json()["agents"]}


def test_one_active_replica_and_the_rest_standby(api: Api, backend: Any, ha_router: Any) -> None:
    router, agents = ha_router(3)
    active = backend.settle_ha(router)
    states = ha_states(api, router)
    assert set(states) == {agent.id for agent in agents}
    assert states[active] == "active"
    assert sorted(state for agent_id, state in states.items() if agent_id != active) == [
        "standby",
        "standby",
    ]


def test_a_dead_active_replica_reads_standby_while_others_live(
    api: Api, backend: Any, ha_router: Any
) -> None:
    router, agents = ha_router(2)
    active = backend.settle_ha(router)
    (survivor,) = [agent.id for agent in agents if agent.id != active]
    backend.kill_agents([agent for agent in agents if agent.id == active])
    assert ha_states(api, router)[active] == "standby"
    backend.settle_ha_live(router)  # the survivor takes over and reports it
    assert ha_states(api, router) == {active: "standby", survivor: "active"}  # exactly one


def test_all_hosting_agents_dead_turns_the_active_replica_unknown(
    api: Api, backend: Any, ha_router: Any
) -> None:
    router, agents = ha_router(2)
    active = backend.settle_ha(router)
    backend.kill_agents(agents)
    states = ha_states(api, router)
    assert states[active] == "unknown"
    assert [state for agent_id, state in states.items() if agent_id != active] == ["standby"]


def test_a_dead_replica_already_unknown_does_not_count_toward_all_dead(
    api: Api, backend: Any, ha_router: Any
) -> None:
    """neutron/db/l3_hamode_db.py: only dead active and dead standby replicas are counted."""
    router, agents = ha_router(2)
    active = backend.settle_ha(router)
    backend.kill_agents(agents)
    assert ha_states(api, router)[active] == "unknown"
    (other,) = [agent for agent in agents if agent.id != active]
    backend.revive_agent(other)
    backend.settle_ha_live(router)
    assert ha_states(api, router) == {active: "unknown", other.id: "active"}
    backend.kill_agent(other)
    assert ha_states(api, router) == {active: "unknown", other.id: "standby"}


def test_a_disabled_active_replica_reads_standby(api: Api, backend: Any, ha_router: Any) -> None:
    router, agents = ha_router(2)
    active = backend.settle_ha(router)
    backend.set_admin_state(next(agent for agent in agents if agent.id == active), False)
    states = ha_states(api, router)
    assert set(states) == {agent.id for agent in agents}
    assert states[active] == "standby"
