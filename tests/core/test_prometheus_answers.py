"""A Prometheus instant-query answer read into per-router values, and values into weights."""

from __future__ import annotations

from typing import Any

import pytest

from l3ha.measurement import busy_from_counts, traffic_weights
from l3ha.prometheus import PrometheusError, query_url, samples_by_router
from l3ha.weights import Measured, WeightSource


def _answer(*samples: Any, kind: str = "vector") -> dict[str, Any]:
    return {"status": "success", "data": {"resultType": kind, "result": list(samples)}}


def _sample(router: str, value: str, **labels: str) -> dict[str, Any]:
    return {"metric": {"router_id": router, **labels}, "value": [1700000000.1, value]}


def test_values_are_read_per_router_and_summed_over_hosts() -> None:
    answer = _answer(
        _sample("a", "100.5", host="net-1"), _sample("a", "50", host="net-2"), _sample("b", "0")
    )
    assert samples_by_router(answer) == {"a": 150.5, "b": 0.0}


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({"status": "error", "error": "parse error at char 5"}, "query failed (parse error"),
        (_answer(kind="matrix"), "expected an instant vector, got matrix"),
        (_answer({"metric": {"job": "x"}, "value": [1, "2"]}), "no 'router_id' label"),
        (_answer(_sample("a", "NaN")), "router a: value"),
        (_answer(_sample("a", "-3")), "not a finite number >= 0"),
        (_answer({"metric": {"router_id": "a"}}), "router a: value None"),
        ([1, 2], "query failed"),
    ],
)
def test_malformed_answers_are_one_line_errors(answer: Any, problem: str) -> None:
    with pytest.raises(PrometheusError) as caught:
        samples_by_router(answer)
    assert problem in str(caught.value)
    assert "\n" not in str(caught.value)


def test_query_url_encodes_the_promql() -> None:
    url = query_url("http://127.0.0.1:9090/", 'sum by (router_id) (rate(x{a="b"}[5m]))')
    assert url.startswith("http://127.0.0.1:9090/api/v1/query?query=sum+by+%28router_id%29")
    assert "%5B5m%5D" in url


def test_traffic_becomes_weight_units_rounded_and_capped() -> None:
    weights = traffic_weights({"idle": 0.0, "low": 1.4e6, "mid": 2.6e6, "huge": 9e9}, 1e6, 50)
    assert {k: m.weight for k, m in weights.items()} == {"idle": 1, "low": 1, "mid": 3, "huge": 50}
    assert {m.source for m in weights.values()} == {WeightSource.PROMETHEUS}


def test_counts_at_the_threshold_make_a_router_busy() -> None:
    busy = busy_from_counts({"a": 2, "b": 3, "c": 7}, 3, 10, WeightSource.PORTS)
    assert busy == {"b": Measured(10, WeightSource.PORTS), "c": Measured(10, WeightSource.PORTS)}
