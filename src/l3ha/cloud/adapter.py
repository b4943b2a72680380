"""The openstacksdk adapter: l3ha's ``Cloud`` over Neutron. I/O: HTTP to Neutron and Keystone.

Only this module and its helpers ``l3ha.cloud.sdk_errors`` /
``l3ha.cloud.config_problems`` import ``openstack`` / ``keystoneauth1``.
openstacksdk does the configuration (clouds.yaml, ``OS_*`` variables), the
authentication and the endpoint discovery; every Neutron call then goes through
its authenticated network proxy as a plain HTTP request whose status we check
ourselves. That sidesteps the SDK's traps (``add_router_to_agent`` returns the
409 error dict instead of raising, ``remove_router_from_agent`` swallows 404s,
agent objects build broken URLs): agent and router ids are always strings, and
every change is read back (``routers/{R}/l3-agents`` or the agent) before a
write returns.

SDK, keystoneauth and requests exceptions become ``l3ha.errors`` in one place,
``_translated`` (``sdk_errors.translate_exception``); the status table is
``l3ha.cloud.translate.error_for_status``. Reads (GET, discovery) are retried
on retryable errors with a short backoff; writes are sent once. ``connect``
checks the cloud within an overall deadline. No token or password is ever
logged or put in a message.
"""

from __future__ import annotations

import argparse
import logging
import os
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import quote

import openstack
from keystoneauth1 import exceptions as ksa_exc

from l3ha.clock import Clock, SystemClock
from l3ha.cloud import translate
from l3ha.cloud.base import Cloud, PortState
from l3ha.cloud.config_problems import open_error, quiet_libraries, skipped_config_files
from l3ha.cloud.sdk_errors import as_retried, run_with_deadline, translate_exception
from l3ha.cloud.usage import RouterUsage
from l3ha.errors import (
    ApiNotFoundError,
    ApiTimeoutError,
    AuthError,
    CloudError,
    ConfigError,
    L3haError,
    NotFoundError,
    ReadBackError,
    ServerError,
    UnreachableError,
)
from l3ha.model import Agent, Binding, Router, Snapshot

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 60.0
DEFAULT_WORKERS = 8
#: Extra attempts of an idempotent read (GET, discovery) after a retryable error.
READ_RETRIES = 4
#: First pause between read attempts in seconds; doubled each time, capped at ``MAX_BACKOFF``.
FIRST_BACKOFF = 0.1
MAX_BACKOFF = 1.0
#: ``connect``/``check`` as a whole may take this many api timeouts (then: one-line error).
CONNECT_DEADLINE_TIMEOUTS = 2.0

T = TypeVar("T")
R = TypeVar("R")


def _q(ident: str) -> str:
    """An id made safe to put in a URL path segment."""
    return quote(ident, safe="")


class NeutronCloud:
    """``l3ha.cloud.base.Cloud`` implemented with openstacksdk (see the module docstring)."""

    def __init__(
        self,
        conn: Any,
        *,
        clock: Clock | None = None,
        workers: int = DEFAULT_WORKERS,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        self._conn = conn
        self._clock = clock or SystemClock()
        self._workers = max(1, workers)
        self._timeout = timeout
        self.name = str(getattr(conn.config, "name", None) or "default")

    # --- plumbing -----------------------------------------------------------

    def endpoint_hint(self) -> str:
        """Where this cloud's Neutron is, as far as known without a request (safe to print)."""
        config: Any = self._conn.config
        try:
            value = config.get_endpoint("network") or (config.auth or {}).get("auth_url")
        except Exception:
            value = None
        return translate.safe_url(str(value)) if value else "(endpoint unknown)"

    @contextmanager
    def _translated(self, what: str) -> Iterator[None]:
        """Turn any SDK/keystoneauth/requests exception raised inside into an l3ha error."""
        try:
            yield
        except L3haError:
            raise
        except Exception as exc:
            raise self._translate(exc, what) from exc

    def _where(self, what: str) -> str:
        return f"{what} (cloud {self.name!r}, {self.endpoint_hint()})"

    def _translate(self, exc: Exception, what: str) -> L3haError:
        where = self._where(what)
        if isinstance(exc, ksa_exc.DiscoveryFailure):
            return self._diagnose_discovery(where)
        return translate_exception(exc, where)

    def _diagnose_discovery(self, where: str) -> L3haError:
        """keystoneauth hides why discovery failed: fetch the root document to find out."""
        url = self._conn.config.get_endpoint("network")
        if not url:
            try:
                url = self._conn.session.get_endpoint(
                    service_type="network", interface=self._conn.config.get_interface()
                )
            except Exception as exc:
                return translate_exception(exc, where)
        try:
            resp = self._conn.session.get(
                url, authenticated=False, raise_exc=False, connect_retries=0, timeout=self._timeout
            )
        except Exception as exc:
            return translate_exception(exc, where)
        if resp.status_code >= 400:
            return translate.error_for_status(resp.status_code, f"{where}: version discovery")
        return ServerError(
            f"{where}: version discovery failed, but {translate.safe_url(url)} answers "
            f"HTTP {resp.status_code} now"
        )

    def _request(
        self,
        method: str,
        path: str,
        what: str,
        *,
        body: Mapping[str, Any] | None = None,
        params: Sequence[tuple[str, str]] | None = None,
    ) -> Any:
        """One Neutron call; returns the decoded JSON (``None`` for empty bodies).

        GETs are retried on retryable errors (see ``_retrying``); writes are
        sent once: their retries belong to the executor, which reads back first.
        """
        if method == "GET":
            return self._retrying(lambda: self._request_once(method, path, what, body, params))
        return self._request_once(method, path, what, body, params)

    def _request_once(
        self,
        method: str,
        path: str,
        what: str,
        body: Mapping[str, Any] | None,
        params: Sequence[tuple[str, str]] | None,
    ) -> Any:
        with self._translated(what):
            resp = self._conn.network.request(
                path, method, json=body, params=params, raise_exc=False, timeout=self._timeout
            )
            if resp.status_code >= 400:
                error_body = _json_or_none(resp)
                raise translate.error_for_status(resp.status_code, self._where(what), error_body)
            if not resp.content:
                return None
            return resp.json()

    def _collection(
        self, path: str, key: str, what: str, params: Sequence[tuple[str, str]] = ()
    ) -> list[dict[str, Any]]:
        """A whole collection, following ``<key>_links`` pages when the server paginates."""
        items: list[dict[str, Any]] = []
        url, query = path, list(params) or None
        seen: set[str] = set()
        while True:
            answer = self._request("GET", url, what, params=query)
            if not isinstance(answer, Mapping) or not isinstance(answer.get(key), list):
                raise CloudError(f"{self._where(what)}: the answer has no {key!r} list")
            items.extend(answer[key])
            next_url = translate.next_link(answer, key)
            if next_url is None:
                return items
            if next_url in seen:
                raise CloudError(f"{self._where(what)}: endless pagination (marker ignored)")
            seen.add(next_url)
            url, query = next_url, None

    def _concurrently(self, func: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``[func(i) for i in items]`` on a bounded thread pool; the first error wins."""
        if len(items) <= 1:
            return [func(i) for i in items]
        with ThreadPoolExecutor(max_workers=min(self._workers, len(items))) as pool:
            futures: list[Future[R]] = [pool.submit(func, i) for i in items]
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            failed = [f for f in futures if f in done and f.exception() is not None]
            if failed:
                for f in futures:
                    f.cancel()
                failed[0].result()
            return [f.result() for f in futures]

    def _retrying(self, call: Callable[[], T]) -> T:
        """``call()``, again after a short pause while it fails with a retryable error.

        Only for idempotent calls. A timeout is retried once (each costs a whole
        api timeout). The error that remains says it was temporary and how often
        it was retried.
        """
        delay = FIRST_BACKOFF
        attempt = 0
        while True:
            try:
                return call()
            except L3haError as err:
                if not err.retryable:
                    raise
                limit = 1 if isinstance(err, ApiTimeoutError) else READ_RETRIES
                if attempt >= limit:
                    raise as_retried(err, attempt) from err
                log.debug("retrying after a temporary error: %s", err)
            attempt += 1
            self._clock.sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF)

    def check(self) -> None:
        """Authenticate and discover the Neutron endpoint, within an overall deadline.

        A few requests, each bounded by the api timeout, retried like reads. The
        whole check runs in a worker thread and gives up after
        ``CONNECT_DEADLINE_TIMEOUTS`` api timeouts, so no library hang can hang l3ha.
        """
        if not self._timeout:
            self._retrying(self._check_once)
            return
        deadline = self._timeout * CONNECT_DEADLINE_TIMEOUTS
        outcome = run_with_deadline(lambda: self._retrying(self._check_once), deadline)
        if outcome is None:
            raise UnreachableError(
                f"{self._where('connect')}: no answer within {deadline:g} s "
                f"(tried Keystone at {self._auth_url_hint()} and the Neutron endpoint; "
                "check the auth URL and --api-timeout)"
            )

    def _check_once(self) -> None:
        with self._translated("connect"):
            self._probe_identity()
            try:
                self._conn.network.get_endpoint()
            except Exception as exc:
                if _is_bare_config_problem(exc):
                    raise ConfigError(
                        f"cloud {self.name!r}: incomplete cloud configuration "
                        f"({translate.one_line(str(exc))})"
                    ) from exc
                raise

    def _auth_url(self) -> str | None:
        auth = getattr(self._conn.config, "auth", None) or {}
        auth_type = str(getattr(self._conn.config, "config", {}).get("auth_type") or "")
        url = auth.get("auth_url") if isinstance(auth, Mapping) else None
        if not url or auth_type in ("none", "noauth", "admin_token"):
            return None
        return str(url)

    def _auth_url_hint(self) -> str:
        url = self._auth_url()
        return translate.safe_url(url) if url else "(no auth URL)"

    def _probe_identity(self) -> None:
        """Fetch the auth URL's version document unauthenticated before authenticating.

        keystoneauth answers a 401 to its version discovery by retrying the
        request *authenticated*, from inside the plugin's (non-reentrant) lock
        that the first authentication already holds: it deadlocks. That happens
        whenever the auth URL is not Keystone's (e.g. Neutron's own URL), so a
        401 here becomes a clear error before keystoneauth gets there. The probe
        also names an unreachable Keystone in one line.
        """
        url = self._auth_url()
        if url is None:
            return
        where = f"reach Keystone at {translate.safe_url(url)} (cloud {self.name!r})"
        try:
            resp = self._conn.session.get(
                url, authenticated=False, raise_exc=False, connect_retries=0, timeout=self._timeout
            )
        except Exception as exc:
            raise translate_exception(exc, where) from exc
        if resp.status_code in (401, 403):
            raise AuthError(
                f"{where}: its version discovery answered HTTP {resp.status_code}, so it is "
                "not a Keystone identity URL (check auth_url / OS_AUTH_URL)"
            )
        if resp.status_code >= 500:
            raise translate.error_for_status(resp.status_code, f"{where}: version discovery")

    # --- reads ----------------------------------------------------------------

    def list_agents(self) -> list[Agent]:
        """Every L3 agent."""
        raw = self._collection(
            "/agents", "agents", "list L3 agents", [("agent_type", translate.L3_AGENT_TYPE)]
        )
        return [translate.agent_from_dict(a) for a in raw if translate.is_l3_agent(a)]

    def get_agent(self, agent_id: str) -> Agent:
        """One L3 agent, read fresh (``NotFoundError`` when it does not exist)."""
        what = f"show agent {agent_id}"
        try:
            body = self._request("GET", f"/agents/{_q(agent_id)}", what)
        except ApiNotFoundError as exc:
            raise NotFoundError(f"no agent with id {agent_id!r}") from exc
        data = body.get("agent") if isinstance(body, Mapping) else None
        if not isinstance(data, Mapping):
            raise CloudError(f"{what}: answer has no 'agent'")
        if not translate.is_l3_agent(data):
            kind = data.get("agent_type")
            raise NotFoundError(f"agent {agent_id!r} is a {kind}, not an L3 agent")
        return translate.agent_from_dict(data)

    def list_routers(self) -> list[Router]:
        """Every router."""
        raw = self._collection("/routers", "routers", "list routers")
        return [translate.router_from_dict(r) for r in raw]

    def routers_on_agent(self, agent_id: str) -> list[Binding]:
        """The routers scheduled to one agent, as bindings (no ``ha_state``)."""
        what = f"list routers on agent {agent_id}"
        raw = self._collection(f"/agents/{_q(agent_id)}/l3-routers", "routers", what)
        return translate.bindings_from_agent_routers(agent_id, raw)

    def router_bindings(self, router_id: str) -> list[Binding]:
        """The agents hosting one router, read fresh, with ``ha_state``."""
        what = f"list L3 agents hosting router {router_id}"
        raw = self._collection(f"/routers/{_q(router_id)}/l3-agents", "agents", what)
        return translate.bindings_from_hosting_agents(router_id, raw)

    def read_snapshot(self, with_ha_state: bool = False) -> Snapshot:
        """Agents, routers and bindings; per-agent (and per-HA-router) calls run concurrently.

        ``with_ha_state`` reads ``ha_state`` of every hosted HA router too (one
        call per HA router). ``observed_at`` is this machine's UTC time when
        the read began.
        """
        observed_at = self._clock.wall().isoformat()
        agents = self.list_agents()
        routers = self.list_routers()
        per_agent = self._concurrently(self.routers_on_agent, [a.id for a in agents])
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
        fresh = self._concurrently(self.router_bindings, ha_ids)
        ha_set = set(ha_ids)
        kept = [b for b in bindings if b.router_id not in ha_set]
        return kept + [b for group in fresh for b in group]

    def router_ports(self, router_id: str) -> list[PortState]:
        """The router's ports with status and binding host."""
        what = f"list ports of router {router_id}"
        raw = self._collection("/ports", "ports", what, [("device_id", router_id)])
        return [translate.port_from_dict(p) for p in raw]

    def ports_of_routers(self, router_ids: Sequence[str]) -> dict[str, list[PortState]]:
        """``router_ports`` for many routers, concurrently."""
        results = self._concurrently(self.router_ports, list(router_ids))
        return dict(zip(router_ids, results, strict=True))

    def usage(self) -> RouterUsage:
        """Interface ports and floating IPs per router, one listing each (``cloud.usage``)."""
        return RouterUsage(self._collection)

    # --- writes (each read back) --------------------------------------------

    def bind(self, router_id: str, agent_id: str) -> None:
        """Schedule the router to the agent and read it back; raises on any refusal."""
        what = f"bind router {router_id} to agent {agent_id}"
        path = f"/agents/{_q(agent_id)}/l3-routers"
        self._request("POST", path, what, body={"router_id": router_id})
        self._expect_binding(router_id, agent_id, True, what)

    def unbind(self, router_id: str, agent_id: str) -> None:
        """Remove the router from the agent and read it back (idempotent)."""
        what = f"unbind router {router_id} from agent {agent_id}"
        self._request("DELETE", f"/agents/{_q(agent_id)}/l3-routers/{_q(router_id)}", what)
        self._expect_binding(router_id, agent_id, False, what)

    def _expect_binding(self, router_id: str, agent_id: str, present: bool, what: str) -> None:
        hosts = [b.agent_id for b in self.router_bindings(router_id)]
        if (agent_id in hosts) != present:
            state = "still hosts" if agent_id in hosts else "does not host"
            raise ReadBackError(
                f"{what}: accepted, but reading back shows agent {agent_id} {state} it "
                f"(hosting agents: {', '.join(hosts) or 'none'})"
            )

    def set_admin_state(self, agent_id: str, up: bool) -> None:
        """Enable or disable an agent and read it back."""
        self._update_agent(agent_id, "admin_state_up", up)

    def set_description(self, agent_id: str, description: str) -> None:
        """Replace an agent's description (l3ha marks drained agents with it)."""
        self._update_agent(agent_id, "description", description)

    def _update_agent(self, agent_id: str, field: str, value: object) -> None:
        what = f"update agent {agent_id} ({field}={value!r})"
        self._request("PUT", f"/agents/{_q(agent_id)}", what, body={"agent": {field: value}})
        agent = self.get_agent(agent_id)
        seen = agent.admin_state_up if field == "admin_state_up" else agent.description
        if seen != value:
            raise ReadBackError(f"{what}: accepted, but reading back shows {field}={seen!r}")


def _json_or_none(resp: Any) -> Any:
    try:
        return resp.json()
    except ValueError:
        return None


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


# --- connecting ---------------------------------------------------------------


def connect(
    cloud: str | None = None,
    *,
    insecure: bool = False,
    cacert: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    clock: Clock | None = None,
    workers: int = DEFAULT_WORKERS,
    check: bool = True,
) -> NeutronCloud:
    """Open the cloud named ``cloud`` (else ``OS_CLOUD``, else ``OS_*`` variables).

    With ``check`` (the default) authentication and endpoint discovery happen
    now, so a bad configuration, bad credentials or an unreachable API fail
    here with a one-line error rather than in the middle of a command.
    """
    quiet_libraries()
    options: dict[str, Any] = {}
    if insecure:
        log.warning("TLS certificate verification is OFF (--insecure); use --os-cacert instead")
        warnings.filterwarnings("ignore", message="Unverified HTTPS request")
        options["verify"] = False
        options["insecure"] = True
    if cacert:
        if not os.access(cacert, os.R_OK) or not os.path.isfile(cacert):
            raise ConfigError(f"CA bundle {cacert} is not a readable file")
        options["cacert"] = cacert
    if timeout:
        options["api_timeout"] = timeout
    with skipped_config_files() as skipped:
        try:
            conn = openstack.connect(cloud=cloud, **options)
        except Exception as exc:
            raise open_error(exc, cloud, skipped) from exc
    result = NeutronCloud(conn, clock=clock, workers=workers, timeout=timeout)
    if check:
        result.check()
    return result


def connect_from_args(args: argparse.Namespace, clock: Clock | None = None) -> NeutronCloud:
    """``connect`` with the options ``l3ha.cli.common.add_cloud_options`` defines."""
    return connect(
        cloud=getattr(args, "os_cloud", None),
        insecure=bool(getattr(args, "insecure", False)),
        cacert=getattr(args, "os_cacert", None),
        timeout=getattr(args, "api_timeout", DEFAULT_TIMEOUT),
        clock=clock,
    )


def _is_bare_config_problem(exc: Exception) -> bool:
    """keystoneauth raises a bare ``Exception`` for e.g. a missing password."""
    return type(exc) is Exception and "required" in str(exc)


def as_cloud(cloud: NeutronCloud) -> Cloud:
    """``cloud`` typed as the protocol (mypy checks here that the adapter implements it)."""
    return cloud
