"""Contract: one pass of Neutron's automatic L3 failover (``allow_automatic_l3agent_failover``).

The emulator models it under ``--neutron-auto-failover`` (l3ha/emulator/sim_failover.py).
The periodic check takes every binding of an enabled agent dead longer than its dead limit
and reschedules the router: unbind from every hosting agent and schedule again in one
transaction. With no live agent able to host the router, RouterReschedulingFailed rolls
the unbind back and the router stays on its dead agent; with one, the router moves to a
live agent (neutron/db/agentschedulers_db.py ``reschedule_resources_from_down_agents``,
db/l3_agentschedulers_db.py ``reschedule_router``).

Both backends share their agents with other tests, so the pass runs with a dead limit
longer than any other test's agent has been dead (``FAILOVER_DEAD_LIMIT_S``), and only
this test's agents are made ``long_dead``. A distributed router can only be hosted by
``dvr_snat`` agents, and this test kills every one of them, so "no live agent able to host
it" holds on the shared server too.
"""

from __future__ import annotations

from typing import Any

from tests.contract.contract_http import Api
from tests.contract.contract_neutron import AgentRef


def live_agents(api: Api, mode: str | None = None) -> dict[str, AgentRef]:
    """The live L3 agents the API lists (of one agent_mode, or all), by id."""
    agents = api.get("/v2.0/agents?agent_type=L3%20agent").json()["agents"]
    return {
        str(a["id"]): AgentRef(id=str(a["id"]), host=str(a["host"]))
        for a in agents
        if a["alive"] and (mode is None or a["configurations"].get("agent_mode") == mode)
    }


def test_failover_leaves_a_router_with_no_live_candidate_on_its_dead_agent_and_moves_others(
    api: Api, backend: Any, new_router: Any
) -> None:
    # No live agent can host it: the unbind is rolled back, the router stays put.
    stuck = new_router(distributed=True)
    for agent_id in api.hosting_agent_ids(stuck):
        api.unbind(agent_id, stuck)
    dead = backend.new_agent("dvr_snat")
    assert api.bind(dead.id, stuck).status == 201
    backend.kill_agents([a for a in live_agents(api, "dvr_snat").values() if a != dead])
    backend.long_dead(dead)
    assert live_agents(api, "dvr_snat") == {}
    backend.failover_pass()
    assert api.hosting_agent_ids(stuck) == {dead.id}

    # A live agent can host it: the router moves off its dead agent onto a live one.
    moved = new_router()
    gone = backend.new_agent()
    assert api.bind(gone.id, moved).status == 201
    backend.new_agent()  # at least one fresh, live legacy agent
    backend.long_dead(gone)
    backend.failover_pass()
    (host,) = api.hosting_agent_ids(moved)
    assert host != gone.id
    assert host in live_agents(api)
    assert api.hosting_agent_ids(stuck) == {dead.id}  # a second pass leaves it too
