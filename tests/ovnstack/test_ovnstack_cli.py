"""``l3ha lab stack`` with --ovn: the options it refuses and the address plan it lays out.
No stack is started."""

from __future__ import annotations

import ipaddress
import itertools
from pathlib import Path

import pytest

from l3ha.cli.main import main
from l3ha.errors import BadInputError
from l3ha.lab.stack.ovnspec import MAX_OVN_ROUTERS, OvnSpec, ovn_tenant_cidr, ovn_tenant_router_ip
from l3ha.lab.stack.spec import EXTERNAL_CIDR


def test_ovn_stack_refuses_ml2_ovs_options(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["lab", "stack", "up", "--ovn", "--nodes", "3", "--routers", "1", "--dhcp"]
    assert main([*argv, "--dir", "/nonexistent/l3ov-test"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--ovn takes no" in err[0]


def test_ml2_ovs_stack_still_needs_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lab", "stack", "up", "--routers", "1", "--dir", "/nonexistent/l3ov-t"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--nodes is required" in err[0]


def test_sb_outage_needs_an_ovn_stack(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lab", "stack", "fault", "sb-outage", "1", "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no OVN stack is up" in err[0]


def test_the_address_plan_fits_255_routers_apart_from_the_external_network() -> None:
    spec = OvnSpec(chassis=3, routers=MAX_OVN_ROUTERS)
    assert MAX_OVN_ROUTERS >= 100
    subnets = [ipaddress.ip_network(ovn_tenant_cidr(k)) for k in spec.router_indexes]
    external = ipaddress.ip_network(EXTERNAL_CIDR)
    assert len(set(subnets)) == len(subnets)
    assert not any(a.overlaps(b) for a, b in itertools.combinations([external, *subnets], 2))
    for k, subnet in zip(spec.router_indexes, subnets, strict=True):
        assert ipaddress.ip_address(ovn_tenant_router_ip(k)) == next(subnet.hosts())
    with pytest.raises(BadInputError, match="--routers must be 0-255"):
        OvnSpec(routers=MAX_OVN_ROUTERS + 1)
