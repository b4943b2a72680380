"""The openstacksdk adapter: l3ha's ``Cloud`` over Neutron. I/O: HTTP to Neutron and Keystone.

``NeutronCloud`` turns the Neutron API into model objects. Every request
goes through ``l3ha.cloud.transport.NeutronApi`` (paced by the API rate cap,
retried under the one retry policy, errors translated). Every write is read
back once, here: ``bind``/``unbind`` read ``routers/{R}/l3-agents`` and
return the hosting agents they saw, so the executor needs no read of its
own; agent updates read the agent back. ``connect`` opens and checks a cloud
(``l3ha.cloud.connect``). openstacksdk is imported by ``l3ha.cloud`` modules
only (this one's helpers: ``transport``, ``connect``, ``sdk_errors``,
``config_problems``).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from l3ha.clock import Clock, SystemClock
from l3ha.cloud import translate
from l3ha.cloud.base import Cloud, PortState
from l3ha.cloud.connect import check_cloud, open_connection
from l3ha.cloud.retry import RetryPolicy
from l3ha.cloud.transport import NeutronApi, quoted
from l3ha.cloud.usage import RouterUsage
from l3ha.errors import (
    ApiNotFoundError,
    AuthError,
    BadInputError,
    CloudError,
    ConflictError,
    NotFoundError,
    ReadBackError,
)
from l3ha.model import Agent, Binding, Router, Snapshot
from l3ha.tokenbucket import TokenBucket

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 60.0
#: Concurrent reads of one snapshot (each paced by the API rate cap like every call).
DEFAULT_WORKERS = 16
#: A call's retries may go on for this many api timeouts in all (the retry deadline).
RETRY_DEADLINE_TIMEOUTS = 2.5
#: An agent id no agent has: the scheduler access check asks for its routers.
NO_SUCH_AGENT = "00000000-0000-0000-0000-000000000000"
#: Routers whose ports one ``GET /ports?device_id=...`` asks for (keeps the URL ~2 kB).
PORTS_PER_CALL = 40


def retry_policy(timeout: float | None) -> RetryPolicy:
    """The retry budget of one call: 5 attempts (2 after timeouts), 2.5 api timeouts in all."""
    return RetryPolicy(deadline=RETRY_DEADLINE_TIMEOUTS * timeout if timeout else 30.0)


def api_rate_bucket(api_rate: float | None, clock: Clock) -> TokenBucket | None:
    """The token bucket of ``--api-rate`` (``None``: no cap); one second's worth of burst."""
    if api_rate is None:
        return None
    if api_rate <= 0:
        raise BadInputError(f"--api-rate must be positive, not {api_rate:g}")
    return TokenBucket(api_rate, max(1, int(api_rate)), clock)


class NeutronCloud:
    """``l3ha.cloud.base.Cloud`` implemented with openstacksdk (see the module docstring)."""

    def __init__(
        self,
        conn: Any,
        *,
        clock: Clock | None = None,
        workers: int = DEFAULT_WORKERS,
        timeout: float | None = DEFAULT_TIMEOUT,
        api_rate: float | None = None,
    ) -> None:
        clock = clock or SystemClock()
        self._api = NeutronApi(
            conn,
            clock=clock,
            workers=workers,
            timeout=timeout,
            retry=retry_policy(timeout),
            rate=api_rate_bucket(api_rate, clock),
        )
        self._clock = clock
        self.name = self._api.name

    @property
    def api(self) -> NeutronApi:
        """The paced, retried request plumbing, for the cloud modules beside this one
        (``cloud.dhcp``, ``cloud.usage``) so their calls obey the same policy and cap."""
        return self._api

    def endpoint_hint(self) -> str:
        """Where this cloud's Neutron is, as far as known without a request (safe to print)."""
        return self._api.endpoint_hint()

    def check(self) -> None:
        """Authenticate and discover the Neutron endpoint (``l3ha.cloud.connect.check_cloud``)."""
        check_cloud(self._api)

    # --- reads ----------------------------------------------------------------

    def list_agents(self) -> list[Agent]:
        """Every L3 agent."""
        agents = self.agents_of_type(translate.L3_AGENT_TYPE, "list L3 agents")
        if not agents:
            self.check_scheduler_access("l3-routers", "L3")
        return agents

    def agents_of_type(self, agent_type: str, what: str) -> list[Agent]:
        """Every agent of ``agent_type`` (L3, DHCP, OVN gateway), in one paged listing."""
        raw = self._api.collection("/agents", "agents", what, [("agent_type", agent_type)])
        return [translate.agent_from_dict(a) for a in raw if a.get("agent_type") == agent_type]

    def check_scheduler_access(self, collection: str, kind: str) -> None:
        """No ``kind`` agent visible: an empty cloud, or an account Neutron hides them from.

        Neutron filters ``GET /agents`` by its policy instead of refusing it, so
        an account without the right sees an empty list. The agent schedulers
        (``collection``: ``l3-routers``, ``dhcp-networks``) check their policy
        before looking the agent up: a 403 for a made-up agent id tells the two
        apart, and becomes one ``AuthError``.
        """
        what = f"list {kind} agents"
        try:
            self._api.request("GET", f"/agents/{NO_SUCH_AGENT}/{collection}", what)
        except (ApiNotFoundError, ConflictError):
            return  # allowed: the cloud has no such agent (ML2/OVN: "not a L3 Agent")
        except AuthError as exc:
            raise AuthError(
                f"{exc}: no {kind} agent is visible to this account; l3ha needs Neutron's "
                "admin role or the l3ha role of docs/permissions.md"
            ) from exc

    def get_agent(self, agent_id: str) -> Agent:
        """One L3 agent, read fresh (``NotFoundError`` when it does not exist)."""
        try:
            data = self.agent_dict(agent_id, f"show agent {agent_id}")
        except ApiNotFoundError as exc:
            raise NotFoundError(f"no agent with id {agent_id!r}") from exc
        if not translate.is_l3_agent(data):
            kind = data.get("agent_type")
            raise NotFoundError(f"agent {agent_id!r} is a {kind}, not an L3 agent")
        return translate.agent_from_dict(data)

    def agent_dict(self, agent_id: str, what: str) -> Mapping[str, Any]:
        """``GET /agents/{id}``: the agent as Neutron shows it, of any type."""
        body = self._api.request("GET", f"/agents/{quoted(agent_id)}", what)
        data = body.get("agent") if isinstance(body, Mapping) else None
        if not isinstance(data, Mapping):
            raise CloudError(f"{what}: answer has no 'agent'")
        return data

    def list_routers(self) -> list[Router]:
        """Every router."""
        raw = self._api.collection("/routers", "routers", "list routers")
        return [translate.router_from_dict(r) for r in raw]

    def routers_on_agent(self, agent_id: str) -> list[Binding]:
        """The routers scheduled to one agent, as bindings (no ``ha_state``)."""
        what = f"list routers on agent {agent_id}"
        raw = self._api.collection(f"/agents/{quoted(agent_id)}/l3-routers", "routers", what)
        return translate.bindings_from_agent_routers(agent_id, raw)

    def router_bindings(self, router_id: str) -> list[Binding]:
        """The agents hosting one router, read fresh, with ``ha_state``."""
        what = f"list L3 agents hosting router {router_id}"
        raw = self._api.collection(f"/routers/{quoted(router_id)}/l3-agents", "agents", what)
        return translate.bindings_from_hosting_agents(router_id, raw)

    def read_snapshot(self, with_ha_state: bool = False) -> Snapshot:
        """Agents, routers and bindings; the agent and router lists are read side by side,
        then the per-agent (and per-HA-router) calls run concurrently.

        ``with_ha_state`` reads ``ha_state`` of every hosted HA router too (one
        call per HA router). ``observed_at`` is this machine's UTC time when
        the read began.
        """
        observed_at = self._clock.wall().isoformat()
        agents, routers = self._api.both(self.list_agents, self.list_routers)
        per_agent = self._api.concurrently(self.routers_on_agent, [a.id for a in agents])
        bindings = [b for group in per_agent for b in group]
        if with_ha_state:
            bindings = self._with_ha_state(routers, bindings)
        return Snapshot(
            agents=tuple(agents),
            routers=tuple(routers),
            bindings=tuple(_known_only(bindings, agents, routers)),
            observed_at=observed_at,
        )

    def _with_ha_state(self, routers: list[Router], bindings: list[Binding]) -> list[Binding]:
        hosted = {b.router_id for b in bindings}
        ha_ids = [r.id for r in routers if r.ha and r.id in hosted]
        fresh = self._api.concurrently(self.router_bindings, ha_ids)
        ha_set = set(ha_ids)
        kept = [b for b in bindings if b.router_id not in ha_set]
        return kept + [b for group in fresh for b in group]

    def router_ports(self, router_id: str) -> list[PortState]:
        """The router's ports with status and binding host."""
        return self.ports_of_routers([router_id])[router_id]

    def ports_of_routers(self, router_ids: Sequence[str]) -> dict[str, list[PortState]]:
        """The ports of many routers: one ``GET /ports?device_id=A&device_id=B...`` per
        ``PORTS_PER_CALL`` routers (Neutron ORs repeated filter values)."""
        wanted = list(dict.fromkeys(router_ids))
        found: dict[str, list[PortState]] = {r: [] for r in wanted}
        for start in range(0, len(wanted), PORTS_PER_CALL):
            chunk = wanted[start : start + PORTS_PER_CALL]
            what = f"list ports of router {chunk[0]}" + (
                f" and {len(chunk) - 1} more" if len(chunk) > 1 else ""
            )
            params = [("device_id", r) for r in chunk]
            asked = set(chunk)
            for raw in self._api.collection("/ports", "ports", what, params):
                owner = str(raw.get("device_id") or "")
                if owner in asked:
                    found[owner].append(translate.port_from_dict(raw))
        return found

    def usage(self) -> RouterUsage:
        """Interface ports and floating IPs per router, one listing each (``cloud.usage``)."""
        return RouterUsage(self._api.collection)

    # --- writes (each read back once, here) -----------------------------------

    def bind(self, router_id: str, agent_id: str) -> list[Binding]:
        """Schedule the router to the agent; the router's bindings read back (raises on any
        refusal, and ``ReadBackError`` when the binding is not there afterwards)."""
        what = f"bind router {router_id} to agent {agent_id}"
        path = f"/agents/{quoted(agent_id)}/l3-routers"
        self._api.request("POST", path, what, body={"router_id": router_id})
        return self._expect_binding(router_id, agent_id, True, what)

    def unbind(self, router_id: str, agent_id: str) -> list[Binding]:
        """Remove the router from the agent (idempotent); the bindings read back afterwards."""
        what = f"unbind router {router_id} from agent {agent_id}"
        path = f"/agents/{quoted(agent_id)}/l3-routers/{quoted(router_id)}"
        self._api.request("DELETE", path, what)
        return self._expect_binding(router_id, agent_id, False, what)

    def _expect_binding(
        self, router_id: str, agent_id: str, present: bool, what: str
    ) -> list[Binding]:
        bindings = self.router_bindings(router_id)
        expect_hosted(what, agent_id, present, [b.agent_id for b in bindings], "agents")
        return bindings

    def set_admin_state(self, agent_id: str, up: bool) -> None:
        """Enable or disable an agent and read it back."""
        self._update_agent(agent_id, "admin_state_up", up)

    def set_description(self, agent_id: str, description: str) -> None:
        """Replace an agent's description (l3ha marks drained agents with it)."""
        self._update_agent(agent_id, "description", description)

    def _update_agent(self, agent_id: str, field: str, value: object) -> None:
        what = f"update agent {agent_id} ({field}={value!r})"
        body = {"agent": {field: value}}
        self._api.request("PUT", f"/agents/{quoted(agent_id)}", what, body=body)
        agent = self.get_agent(agent_id)
        seen = agent.admin_state_up if field == "admin_state_up" else agent.description
        if seen != value:
            raise ReadBackError(f"{what}: accepted, but reading back shows {field}={seen!r}")


def expect_hosted(what: str, agent_id: str, present: bool, hosts: list[str], noun: str) -> None:
    """A write's read-back: ``ReadBackError`` unless ``agent_id`` is among ``hosts`` (the
    hosting ``noun`` read after the write) exactly when it should be (``present``)."""
    if (agent_id in hosts) != present:
        state = "still hosts" if agent_id in hosts else "does not host"
        raise ReadBackError(
            f"{what}: accepted, but reading back shows agent {agent_id} {state} it "
            f"(hosting {noun}: {', '.join(hosts) or 'none'})"
        )


def _known_only(
    bindings: list[Binding], agents: list[Agent], routers: list[Router]
) -> list[Binding]:
    """Drop bindings to agents/routers that appeared or vanished between our calls."""
    agent_ids = {a.id for a in agents}
    router_ids = {r.id for r in routers}
    kept = [b for b in bindings if b.agent_id in agent_ids and b.router_id in router_ids]
    if len(kept) != len(bindings):
        log.info("ignored %d bindings that changed during the read", len(bindings) - len(kept))
    return kept


def connect(
    cloud: str | None = None,
    *,
    insecure: bool = False,
    cacert: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    clock: Clock | None = None,
    workers: int = DEFAULT_WORKERS,
    api_rate: float | None = None,
    check: bool = True,
    sdk_arguments: argparse.Namespace | None = None,
    connection: Any = None,
) -> NeutronCloud:
    """Open the cloud named ``cloud`` (else ``OS_CLOUD``, else ``OS_*`` variables).

    ``api_rate``: at most this many API calls per second (``None``: no cap).
    With ``check`` (the default) authentication and endpoint discovery happen
    now, so a bad configuration, bad credentials or an unreachable API fail
    here with a one-line error rather than in the middle of a command.
    ``sdk_arguments``: the ``openstack`` client's options as parsed (``l3ha.cloud.options``).
    ``connection``: an SDK connection already made (``openstack l3ha ...`` passes the
    ``openstack`` client's), used instead of opening one.
    """
    conn = connection or open_connection(
        cloud, insecure=insecure, cacert=cacert, timeout=timeout, sdk_arguments=sdk_arguments
    )
    result = NeutronCloud(conn, clock=clock, workers=workers, timeout=timeout, api_rate=api_rate)
    if check:
        result.check()
    return result


def as_cloud(cloud: NeutronCloud) -> Cloud:
    """``cloud`` typed as the protocol (mypy checks here that the adapter implements it)."""
    return cloud
