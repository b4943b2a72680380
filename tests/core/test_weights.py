"""Router weight precedence: weights file, weight tag, busy tag, default."""

from __future__ import annotations

from l3ha.model import Router
from l3ha.weights import WeightPolicy, weight_warnings


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
