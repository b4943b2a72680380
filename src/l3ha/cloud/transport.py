"""One authenticated Neutron call at a time: paced, retried, translated. I/O: HTTP to Neutron.

``NeutronApi`` sends every request l3ha makes to Neutron through the SDK's
authenticated network proxy as a plain HTTP request whose status it checks
itself (that sidesteps the SDK's traps: ``add_router_to_agent`` returning a
409 error dict, ``remove_router_from_agent`` swallowing 404s, agent objects
building broken URLs). Each attempt first takes a token from the API rate
cap (``--api-rate``: one bucket shared by every thread using this cloud);
every call is retried under the one ``RetryPolicy`` (all of l3ha's calls are
idempotent: reads, ``PUT`` of an agent field, the scheduler's ``POST`` that
answers 201 when the binding already exists and its ``DELETE`` that answers
204 when it does not). SDK, keystoneauth and requests exceptions become
``l3ha.errors`` here (``sdk_errors.translate_exception``; the status table
is ``translate.error_for_status``). Every attempt is logged at DEBUG on the
``l3ha.api`` logger (``l3ha -v`` or ``--debug`` shows them): method, path and
query, status (or the error) and milliseconds, as ``openstack --debug`` shows
its requests; never a header, body, token or password.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

from keystoneauth1 import exceptions as ksa_exc

from l3ha.clock import Clock
from l3ha.cloud import translate
from l3ha.cloud.retry import RetryPolicy
from l3ha.cloud.sdk_errors import translate_exception
from l3ha.errors import CloudError, L3haError, ServerError
from l3ha.tokenbucket import TokenBucket

T = TypeVar("T")
R = TypeVar("R")

api_log = logging.getLogger("l3ha.api")


def quoted(ident: str) -> str:
    """An id made safe to put in a URL path segment."""
    return quote(ident, safe="")


class NeutronApi:
    """Requests to one cloud's Neutron (see the module docstring)."""

    def __init__(
        self,
        conn: Any,
        *,
        clock: Clock,
        workers: int,
        timeout: float | None,
        retry: RetryPolicy,
        rate: TokenBucket | None,
    ) -> None:
        self.conn = conn
        self.clock = clock
        self.workers = max(1, workers)
        self.timeout = timeout
        self.retry = retry
        self.rate = rate
        self.name = str(getattr(conn.config, "name", None) or "default")

    def endpoint_hint(self) -> str:
        """Where this cloud's Neutron is, as far as known without a request (safe to print)."""
        config: Any = self.conn.config
        try:
            value = config.get_endpoint("network") or (config.auth or {}).get("auth_url")
        except Exception:
            value = None
        return translate.safe_url(str(value)) if value else "(endpoint unknown)"

    def where(self, what: str) -> str:
        """``what`` with the cloud's name and endpoint, for error messages."""
        return f"{what} (cloud {self.name!r}, {self.endpoint_hint()})"

    @contextmanager
    def translated(self, what: str) -> Iterator[None]:
        """Turn any SDK/keystoneauth/requests exception raised inside into an l3ha error."""
        try:
            yield
        except L3haError:
            raise
        except Exception as exc:
            where = self.where(what)
            if isinstance(exc, ksa_exc.DiscoveryFailure):
                raise self._diagnose_discovery(where) from exc
            raise translate_exception(exc, where) from exc

    def _diagnose_discovery(self, where: str) -> L3haError:
        """keystoneauth hides why discovery failed: fetch the root document to find out."""
        url = self.conn.config.get_endpoint("network")
        if not url:
            try:
                url = self.conn.session.get_endpoint(
                    service_type="network", interface=self.conn.config.get_interface()
                )
            except Exception as exc:
                return translate_exception(exc, where)
        try:
            resp = self.conn.session.get(
                url, authenticated=False, raise_exc=False, connect_retries=0, timeout=self.timeout
            )
        except Exception as exc:
            return translate_exception(exc, where)
        if resp.status_code >= 400:
            return translate.error_for_status(resp.status_code, f"{where}: version discovery")
        return ServerError(
            f"{where}: version discovery failed, but {translate.safe_url(url)} answers "
            f"HTTP {resp.status_code} now"
        )

    def retrying(self, call: Callable[[], T]) -> T:
        """``call()`` under the retry policy (``l3ha.cloud.retry``)."""
        return self.retry.run(call, self.clock)

    def request(
        self,
        method: str,
        path: str,
        what: str,
        *,
        body: Mapping[str, Any] | None = None,
        params: Sequence[tuple[str, str]] | None = None,
    ) -> Any:
        """One Neutron call, paced and retried; the decoded JSON (``None`` for empty bodies)."""
        return self.retrying(lambda: self._request_once(method, path, what, body, params))

    def _request_once(
        self,
        method: str,
        path: str,
        what: str,
        body: Mapping[str, Any] | None,
        params: Sequence[tuple[str, str]] | None,
    ) -> Any:
        if self.rate is not None:
            self.rate.take()
        with self.logged(method, _shown(path, params)) as outcome, self.translated(what):
            resp = self.conn.network.request(
                path, method, json=body, params=params, raise_exc=False, timeout=self.timeout
            )
            outcome.append(str(resp.status_code))
            return _decoded(resp, self.where(what))

    @contextmanager
    def logged(self, method: str, shown: str) -> Iterator[list[str]]:
        """Log the request inside (DEBUG, ``l3ha.api``): its status, which the caller appends
        to the list it is given, or the error it raised, and how long it took."""
        started, outcome = self.clock.monotonic(), list[str]()
        try:
            yield outcome
            outcome.append("ok")
        except Exception as exc:
            outcome.append(f"failed: {translate.one_line(str(exc))}")
            raise
        finally:
            if api_log.isEnabledFor(logging.DEBUG):
                took = (self.clock.monotonic() - started) * 1000
                api_log.debug("%s %s -> %s (%.0f ms)", method, shown, outcome[0], took)

    def collection(
        self, path: str, key: str, what: str, params: Sequence[tuple[str, str]] = ()
    ) -> list[dict[str, Any]]:
        """A whole collection, following ``<key>_links`` pages when the server paginates."""
        items: list[dict[str, Any]] = []
        url, query = path, list(params) or None
        seen: set[str] = set()
        while True:
            answer = self.request("GET", url, what, params=query)
            if not isinstance(answer, Mapping) or not isinstance(answer.get(key), list):
                raise CloudError(f"{self.where(what)}: the answer has no {key!r} list")
            items.extend(answer[key])
            next_url = translate.next_link(answer, key)
            if next_url is None:
                return items
            if next_url in seen:
                raise CloudError(f"{self.where(what)}: endless pagination (marker ignored)")
            seen.add(next_url)
            url, query = next_url, None

    def both(self, first: Callable[[], T], second: Callable[[], R]) -> tuple[T, R]:
        """``(first(), second())``, the two calls side by side; the first error wins."""
        with ThreadPoolExecutor(max_workers=2) as pool:
            one, two = pool.submit(first), pool.submit(second)
            return one.result(), two.result()

    def concurrently(self, func: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``[func(i) for i in items]`` on a bounded thread pool; the first error wins."""
        if len(items) <= 1:
            return [func(i) for i in items]
        with ThreadPoolExecutor(max_workers=min(self.workers, len(items))) as pool:
            futures: list[Future[R]] = [pool.submit(func, i) for i in items]
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            failed = [f for f in futures if f in done and f.exception() is not None]
            if failed:
                for f in futures:
                    f.cancel()
                failed[0].result()
            return [f.result() for f in futures]


def _decoded(resp: Any, where: str) -> Any:
    """The answer's JSON (None when empty), or the l3ha error of its HTTP error status."""
    if resp.status_code >= 400:
        raise translate.error_for_status(resp.status_code, where, _json_or_none(resp))
    if not resp.content:
        return None
    return resp.json()


def _shown(path: str, params: Sequence[tuple[str, str]] | None) -> str:
    """The request as a log line shows it: a relative path with its query, or a page link
    (a full URL) without user info or query."""
    if "://" in path:
        return translate.safe_url(path)
    return f"{path}?{urlencode(list(params))}" if params else path


def _json_or_none(resp: Any) -> Any:
    try:
        return resp.json()
    except ValueError:
        return None
