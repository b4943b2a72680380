"""When a router's ports change binding:host_id and status, as neutron 29 moves them.

No I/O, but not pure: it changes the world on the simulation's clock.

Binding and unbinding through the scheduler API do not touch the ports. The host changes
only when an agent fetches the router (``sync_routers`` -> ``_ensure_host_set_on_ports``,
neutron/api/rpc/handlers/l3_rpc.py), and ML2 resets a port whose host changed to DOWN
(plugins/ml2/plugin.py ``_process_port_binding``); it turns ACTIVE when the agent has wired
the router (its L2 agent reports the device up), and DOWN when an agent that can still
talk to the server tears the router down. A dead or cut-off agent changes nothing: its
ports stay ACTIVE on the old host.

- Non-HA routers: every central port (gateway, interfaces, SNAT) follows the agent that
  fetched the router (``RouterRec.ports_host`` / ``ports_status``).
- HA routers: each replica's HA port is bound to its agent's host when that agent fetches
  the router (``Replica.synced``); the central ports are bound once, to the reported active
  host, if unbound, and otherwise move when an agent reports active (in ``sim``).
"""

from __future__ import annotations

from l3ha.emulator.records import AgentRec, Replica, RouterRec


def fetched(router: RouterRec, replica: Replica) -> None:
    """The replica's agent starts processing the router: it has called sync_routers."""
    replica.synced = True
    if router.ha:
        if not router.ports_host:
            active = [r for r in router.bindings.values() if r.reported == "active"]
            if active:
                router.ports_host = active[0].agent.host
        return
    if router.ports_host != replica.agent.host:
        router.ports_host = replica.agent.host
        router.ports_status = "DOWN"


def wired(router: RouterRec, replica: Replica) -> None:
    """The agent finished the router: ports bound to its host turn ACTIVE."""
    if not router.ha and router.ports_host == replica.agent.host:
        router.ports_status = "ACTIVE"


def torn_down(router: RouterRec, agent: AgentRec) -> None:
    """The agent removed the router and its L2 agent reported the devices down."""
    if router.ports_host == agent.host:
        router.ports_status = "DOWN"


def reported_active(router: RouterRec, replica: Replica) -> None:
    """An HA replica's agent reported it active: the central ports move to its host."""
    router.ports_host = replica.agent.host
    router.ports_status = "ACTIVE" if replica.processed else "DOWN"


def central_status(router: RouterRec) -> str:
    """Status of a router's central ports. HA: while a replica runs on their host, ACTIVE
    when it is set up; once that replica is unbound, what its agent left (a dead one: ACTIVE)."""
    if router.ha:
        for replica in router.bindings.values():
            if replica.agent.host == router.ports_host:
                up = replica.processed and replica.agent.admin_state_up
                return "ACTIVE" if up else "DOWN"
    return router.ports_status


def ha_port_status(replica: Replica) -> str:
    if replica.synced and replica.processed and replica.agent.admin_state_up:
        return "ACTIVE"
    return "DOWN"
