"""The openstacksdk adapter: l3ha's ``Cloud`` over Neutron. I/O: HTTP to Neutron and Keystone.

This is the only module of l3ha that imports ``openstack`` / ``keystoneauth1``.
openstacksdk does the configuration (clouds.yaml, ``OS_*`` variables), the
authentication and the endpoint discovery; every Neutron call then goes through
its authenticated network proxy as a plain HTTP request whose status we check
ourselves. That sidesteps the SDK's traps (``add_router_to_agent`` returns the
409 error dict instead of raising, ``remove_router_from_agent`` swallows 404s,
agent objects build broken URLs): agent and router ids are always strings, and
every change is read back (``routers/{R}/l3-agents`` or the agent) before a
write returns.

SDK, keystoneauth and requests exceptions become ``l3ha.errors`` in one place,
``_translated``; the status table is ``l3ha.cloud.translate.error_for_status``.
No token or password is ever logged or put in a message.
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
import openstack.exceptions as sdk_exc
import requests
from keystoneauth1 import exceptions as ksa_exc

from l3ha.clock import Clock, SystemClock
from l3ha.cloud import translate
from l3ha.cloud.base import Cloud, PortState
from l3ha.errors import (
    ApiNotFoundError,
    ApiTimeoutError,
    AuthError,
    CloudError,
    ConfigError,
    L3haError,
    NotFoundError,
    ReadBackError,
    UnreachableError,
)
from l3ha.model import Agent, Binding, Router, Snapshot

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 60.0
DEFAULT_WORKERS = 8
_QUIET_LIBRARIES = ("keystoneauth", "openstack", "urllib3", "stevedore")

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
        return CloudError(f"{where}: no Neutron version document at {translate.safe_url(url)}")

    def _request(
        self,
        method: str,
        path: str,
        what: str,
        *,
        body: Mapping[str, Any] | None = None,
        params: Sequence[tuple[str, str]] | None = None,
    ) -> Any:
        """One Neutron call; returns the decoded JSON (``None`` for empty bodies)."""
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

    def check(self) -> None:
        """Authenticate and discover the Neutron endpoint (at most a couple of requests)."""
        with self._translated("connect"):
            try:
                self._conn.network.get_endpoint()
            except Exception as exc:
                if _is_bare_config_problem(exc):
                    raise ConfigError(
                        f"cloud {self.name!r}: incomplete cloud configuration "
                        f"({translate.one_line(str(exc))})"
                    ) from exc
                raise

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


def translate_exception(exc: BaseException, where: str) -> L3haError:
    """The l3ha error for an exception raised by openstacksdk, keystoneauth or requests."""
    if isinstance(exc, L3haError):
        return exc
    text = translate.one_line(str(exc))
    if isinstance(exc, ksa_exc.ConnectTimeout | requests.exceptions.Timeout):
        return ApiTimeoutError(f"{where}: timed out ({text})")
    if isinstance(exc, ksa_exc.SSLError | requests.exceptions.SSLError):
        return UnreachableError(f"{where}: TLS failure ({translate.tls_reason(text)})")
    if isinstance(exc, ksa_exc.ConnectionError | requests.exceptions.ConnectionError):
        return UnreachableError(f"{where}: cannot connect ({translate.connection_reason(text)})")
    if isinstance(exc, ksa_exc.HttpError):
        return translate.error_for_status(int(exc.http_status or 0), f"{where}: {text}")
    if isinstance(exc, sdk_exc.HttpException):
        return translate.error_for_status(int(exc.status_code or 0), f"{where}: {text}")
    if isinstance(exc, ksa_exc.EndpointNotFound):
        return ConfigError(f"{where}: no network endpoint in the service catalog ({text})")
    if isinstance(exc, ksa_exc.AuthPluginException | ksa_exc.MissingAuthMethods):
        return ConfigError(f"{where}: incomplete cloud configuration ({text})")
    if isinstance(exc, ksa_exc.AuthorizationFailure):
        return AuthError(f"{where}: authentication failed ({text})")
    if isinstance(exc, sdk_exc.ConfigException):
        return ConfigError(f"{where}: {text}")
    if isinstance(exc, ksa_exc.DiscoveryFailure):
        return UnreachableError(f"{where}: no usable Neutron API ({text})")
    if isinstance(exc, ValueError):
        return CloudError(f"{where}: unreadable answer ({text})")
    return CloudError(f"{where}: {type(exc).__name__}: {text}")


# --- connecting ---------------------------------------------------------------


def _quiet_libraries() -> None:
    """Keep library debug logs (request dumps) out of our logs, even with ``-vv``."""
    for name in _QUIET_LIBRARIES:
        logger = logging.getLogger(name)
        logger.setLevel(max(logger.getEffectiveLevel(), logging.INFO))


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
    _quiet_libraries()
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
    label = f"cloud {cloud!r}" if cloud else "the configured cloud"
    try:
        conn = openstack.connect(cloud=cloud, **options)
    except Exception as exc:
        error = translate_exception(exc, f"open {label}")
        if isinstance(error, AuthError):
            raise error from exc
        hint = "" if cloud else "; name a clouds.yaml entry with --os-cloud or OS_CLOUD"
        raise ConfigError(f"{error.message}{hint}") from exc
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
