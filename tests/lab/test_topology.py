"""The lab's topology without root: names, prefixes, priorities and keepalived.conf."""

from __future__ import annotations

import pytest

from l3ha.errors import BadInputError, NotFoundError
from l3ha.lab.topology import LabSpec, keepalived_config, owned_by


def test_namespaces_carry_the_lab_prefix() -> None:
    spec = LabSpec("t1", nodes=2, routers=1)
    assert spec.namespaces() == [
        "l3ha-lab-t1-n1",
        "l3ha-lab-t1-n2",
        "l3ha-lab-t1-client",
        "l3ha-lab-t1-br",
    ]


def test_a_lab_never_owns_another_labs_namespaces() -> None:
    assert owned_by("l3ha-lab-t1-n1", "t1")
    assert not owned_by("l3ha-lab-t10-n1", "t1")
    assert not owned_by("l3ha-lab-t1x-n1", "t1")
    assert not owned_by("l3ha-mon-t1-n1", "t1")


def test_priorities_rotate_so_first_masters_spread() -> None:
    spec = LabSpec("t1", nodes=3, routers=3)
    firsts = [
        max(spec.node_names, key=lambda n, r=r: spec.priority(r, n)) for r in spec.router_names
    ]
    assert firsts == ["n1", "n2", "n3"]
    assert sorted(spec.priority("r1", n) for n in spec.node_names) == [80, 90, 100]


def test_keepalived_config_is_vrrpv3_backup_nopreempt() -> None:
    spec = LabSpec("t1", nodes=2, routers=2, advert_int=0.1)
    conf = keepalived_config(spec, "n2")
    assert "vrrp_version 3" in conf
    assert conf.count("state BACKUP") == 2 and conf.count("nopreempt") == 2
    assert "advert_int 0.1\n" in conf
    assert "169.254.100.2/24 dev eth0" in conf
    assert "virtual_router_id 2" in conf
    assert "vrrp_garp_lower_prio_repeat" in conf
    plain = keepalived_config(LabSpec("t1", 2, 1, 0.1, heal_garp=False), "n1")
    assert "vrrp_garp_lower_prio_repeat" not in plain


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"name": "Bad-Name"}, "invalid lab name"),
        ({"nodes": 1}, "--nodes"),
        ({"routers": 0}, "--routers"),
        ({"advert_int": 0.001}, "--advert-int"),
        ({"advert_int": 0.125}, "hundredths"),
    ],
)
def test_bad_specs(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(BadInputError, match=needle):
        LabSpec(**kwargs)  # type: ignore[arg-type]


def test_unknown_node() -> None:
    with pytest.raises(NotFoundError, match="nodes are: n1, n2, n3"):
        LabSpec().check_node("n4")


def test_master_down_interval_is_vrrpv3s() -> None:
    spec = LabSpec("x", nodes=3, routers=1, advert_int=0.1)
    # r1: n1 priority 100, n2 90, n3 80; skew = (256 - priority) x advert / 256
    assert spec.master_down_interval("r1", "n2") == pytest.approx(0.3 + 166 * 0.1 / 256)
    assert spec.master_down_interval("r1", "n1") < spec.master_down_interval("r1", "n3")
