"""A client for one Prometheus instant query: traffic per router. I/O: one HTTP GET to Prometheus.

``query_by_router(url, promql, timeout)`` asks the Prometheus HTTP API
(``GET URL/api/v1/query?query=PROMQL``) for an instant vector and returns the
value of every sample per ``router_id`` label (samples of one router, e.g.
from two hosts during a move, are added up). Anything else — Prometheus
unreachable or slower than ``timeout``, an HTTP error, ``status`` not
``success``, a result that is not a vector, a sample without ``router_id``
or with a value that is not a finite number — is a ``PrometheusError`` with
one line saying what went wrong. The caller decides what that means (for
weights: a warning, never a blocked failover).
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

from l3ha.errors import L3haError

ROUTER_LABEL = "router_id"
DEFAULT_TIMEOUT = 5.0
#: An answer larger than this is refused (a query returning far more than routers).
MAX_ANSWER_BYTES = 64 * 1024 * 1024


class PrometheusError(L3haError):
    """Prometheus could not be asked, or its answer cannot be used."""

    retryable = True


def query_url(base_url: str, promql: str) -> str:
    """The instant-query URL of ``promql`` on the Prometheus at ``base_url``."""
    base = base_url.rstrip("/")
    return f"{base}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"


def query_by_router(
    base_url: str, promql: str, timeout: float = DEFAULT_TIMEOUT
) -> dict[str, float]:
    """Router id -> value of the instant vector ``promql`` (see the module docstring)."""
    where = f"Prometheus at {base_url}"
    request = urllib.request.Request(query_url(base_url, promql), method="GET")
    request.add_header("Accept", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read(MAX_ANSWER_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise PrometheusError(f"{where}: HTTP {exc.code}{_error_text(exc)}") from exc
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise PrometheusError(f"{where}: unreachable ({_one_line(reason)})") from exc
    if len(raw) > MAX_ANSWER_BYTES:
        raise PrometheusError(f"{where}: answer larger than {MAX_ANSWER_BYTES} bytes")
    try:
        document = json.loads(raw)
    except ValueError as exc:
        raise PrometheusError(f"{where}: the answer is not JSON") from exc
    return samples_by_router(document, where)


def samples_by_router(document: Any, where: str = "Prometheus") -> dict[str, float]:
    """The per-router values of a decoded ``/api/v1/query`` answer. Pure."""
    if not isinstance(document, Mapping) or document.get("status") != "success":
        error = document.get("error") if isinstance(document, Mapping) else None
        raise PrometheusError(f"{where}: query failed ({_one_line(error or 'no status success')})")
    data = document.get("data")
    if not isinstance(data, Mapping) or data.get("resultType") != "vector":
        kind = data.get("resultType") if isinstance(data, Mapping) else None
        raise PrometheusError(f"{where}: expected an instant vector, got {kind or 'nothing'}")
    result = data.get("result")
    if not isinstance(result, list):
        raise PrometheusError(f"{where}: the answer has no result list")
    values: dict[str, float] = {}
    for sample in result:
        router_id, value = _sample(sample, where)
        values[router_id] = values.get(router_id, 0.0) + value
    return values


def _sample(sample: Any, where: str) -> tuple[str, float]:
    metric = sample.get("metric") if isinstance(sample, Mapping) else None
    router_id = metric.get(ROUTER_LABEL) if isinstance(metric, Mapping) else None
    if not isinstance(router_id, str) or not router_id:
        raise PrometheusError(f"{where}: a sample has no {ROUTER_LABEL!r} label ({sample!r:.80})")
    pair = sample.get("value")
    try:
        value = float(pair[1]) if isinstance(pair, list) and len(pair) == 2 else math.nan
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise PrometheusError(
            f"{where}: router {router_id}: value {pair!r:.40} is not a finite number >= 0"
        )
    return router_id, value


def _error_text(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read(4096) or b"{}")
    except ValueError:
        return ""
    error = body.get("error") if isinstance(body, Mapping) else None
    return f" ({_one_line(error)})" if error else ""


def _one_line(value: object) -> str:
    lines = str(value).strip().splitlines()
    return lines[0][:200] if lines else type(value).__name__
