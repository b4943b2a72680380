"""Router weight precedence: weights file, weight tag, busy tag, measured, default; max mode."""

from __future__ import annotations

from l3ha.model import Router
from l3ha.weights import (
    Combine,
    Measured,
    WeightPolicy,
    WeightSource,
    merge_measured,
    weight_distribution,
    weight_warnings,
)


def test_default_weight_is_one_and_not_busy() -> None:
    policy = WeightPolicy()
    router = Router(id="r")
    assert policy.weight(router) == 1
    assert not policy.is_busy(router)


def test_busy_tag_uses_configured_busy_weight() -> None:
    policy = WeightPolicy(busy_weight=25, busy_threshold=20)
    router = Router(id="r", tags=("l3ha:busy",))
    assert policy.weight(router) == 25
    assert policy.is_busy(router)


def test_weight_tag_beats_busy_tag_and_file_beats_both() -> None:
    tagged = Router(id="r", tags=("l3ha:busy", "l3ha:weight=3"))
    assert WeightPolicy().weight(tagged) == 3
    assert WeightPolicy(overrides={"r": 40}).weight(tagged) == 40


def test_malformed_weight_tag_is_ignored() -> None:
    assert WeightPolicy().weight(Router(id="r", tags=("l3ha:weight=lots",))) == 1


def test_threshold_decides_busy() -> None:
    policy = WeightPolicy(busy_threshold=5)
    assert policy.is_busy(Router(id="r", tags=("l3ha:weight=5",)))
    assert not policy.is_busy(Router(id="r", tags=("l3ha:weight=4",)))


def test_unknown_ids_and_malformed_tags_are_warned_about() -> None:
    routers = [
        Router(id="r1", tags=("l3ha:weight=abc",)),
        Router(id="r2", tags=("l3ha:weight=-5",)),
        Router(id="r3", tags=("l3ha:weight=4",)),
    ]
    warnings = weight_warnings(WeightPolicy(overrides={"r3": 2, "ghost": 7}), routers)
    assert warnings[0] == "weights file names 1 unknown router id(s): ghost"
    assert "'l3ha:weight=abc'" in warnings[1] and "r1" in warnings[1]
    assert "'l3ha:weight=-5'" in warnings[2]
    assert len(warnings) == 3


# --- measured weights and how sources combine --------------------------------


def test_measured_weight_applies_below_file_and_tags() -> None:
    measured = {"r": Measured(30, WeightSource.PROMETHEUS)}
    policy = WeightPolicy(measured=measured)
    assert policy.weighed(Router(id="r")) == Measured(30, WeightSource.PROMETHEUS)
    tagged = Router(id="r", tags=("l3ha:weight=2",))
    assert policy.weighed(tagged) == Measured(2, WeightSource.TAG)
    filed = WeightPolicy(overrides={"r": 5}, measured=measured)
    assert filed.weighed(tagged) == Measured(5, WeightSource.FILE)
    assert policy.weighed(Router(id="other")) == Measured(1, WeightSource.DEFAULT)


def test_combine_max_takes_the_largest_and_a_tie_goes_to_precedence() -> None:
    measured = {"r": Measured(30, WeightSource.PORTS), "s": Measured(3, WeightSource.FIPS)}
    policy = WeightPolicy(overrides={"s": 3}, measured=measured, combine=Combine.MAX)
    assert policy.weighed(Router(id="r", tags=("l3ha:busy",))) == Measured(30, WeightSource.PORTS)
    assert policy.weighed(Router(id="s")) == Measured(3, WeightSource.FILE)
    assert policy.weighed(Router(id="t", tags=("l3ha:busy",))) == Measured(10, WeightSource.TAG)


def test_measured_busy_router_is_not_plain_and_is_busy() -> None:
    policy = WeightPolicy(measured={"r": Measured(10, WeightSource.FIPS)})
    assert not policy.is_plain(Router(id="r"))
    assert policy.is_plain(Router(id="q"))
    assert policy.is_busy(Router(id="r"))


def test_merge_keeps_the_largest_measurement_per_router() -> None:
    ports = {"a": Measured(10, WeightSource.PORTS), "b": Measured(10, WeightSource.PORTS)}
    traffic = {
        "a": Measured(4, WeightSource.PROMETHEUS),
        "b": Measured(10, WeightSource.PROMETHEUS),
    }
    merged = merge_measured(ports, traffic)
    assert merged == {"a": ports["a"], "b": traffic["b"]}


def test_distribution_counts_routers_per_source() -> None:
    policy = WeightPolicy(measured={"m": Measured(2, WeightSource.PROMETHEUS)})
    routers = [Router(id="m"), Router(id="t", tags=("l3ha:busy",)), Router(id="d")]
    counts = weight_distribution(policy, routers)
    assert counts["prometheus"] == counts["tag"] == counts["default"] == 1
    assert counts["file"] == counts["ports"] == counts["fips"] == 0
