"""HA routers on the real stack: real keepalived in the router namespaces, a node dies.

A stack of its own (3 nodes, 2 HA routers with 2 replicas each): the node holding
a router's VIP is killed; VRRP moves the VIP by itself, ``l3ha watch`` replaces the
replica on the dead node with one on the live node, and ``l3ha ha audit`` agrees
with the real VIP holders read inside the router namespaces.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.realstack.conftest import bring_up, needs_stack

from l3ha.lab.stack.processes import wait_for
from l3ha.lab.stack.reach import Pingers
from l3ha.lab.stack.scenario import Watch
from l3ha.lab.stack.spec import StackSpec, tenant_router_ip
from l3ha.lab.stack.stack import Stack, vip_holders

pytestmark = needs_stack

SPEC = StackSpec(nodes=3, routers=2, ha_routers=2, report_interval=5, agent_down_time=15)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from bring_up(tmp_path_factory.mktemp("realstack-ha") / "st", SPEC)


def ha_states(stack: Stack, router_id: str) -> dict[str, str]:
    agents = stack.api.get(f"routers/{router_id}/l3-agents")["agents"]
    return {str(a["host"]): str(a["ha_state"]) for a in agents}


def audit(stack: Stack, tmp_path: Path) -> list[dict[str, object]]:
    l3ha = str(Path(sys.executable).parent / "l3ha")
    env = {**os.environ, "OS_CLIENT_CONFIG_FILE": str(stack.layout.root / "clouds.yaml")}
    argv = [l3ha, "ha", "audit", "--os-cloud", "l3ha-stack", "-f", "json"]
    result = subprocess.run(argv, capture_output=True, text=True, env=env, check=False, timeout=120)
    assert result.returncode in (0, 1, 2), result.stderr
    findings: list[dict[str, object]] = json.loads(result.stdout or "[]")
    return findings


@pytest.mark.timeout(400)
def test_node_death_vrrp_fails_over_and_l3ha_restores_the_replica(
    stack: Stack, tmp_path: Path
) -> None:
    name, router_id = sorted(stack.state.data["routers"].items())[0]
    index = int(name[1:])
    vip = tenant_router_ip(index)
    wait_for("one active replica", lambda: "active" in ha_states(stack, router_id).values(), 60)
    victim = next(h for h, s in ha_states(stack, router_id).items() if s == "active")
    assert vip_holders(stack, router_id, vip) == [victim]
    pingers = Pingers(stack.spec, tmp_path / "ping").start()
    watch = Watch(stack, tmp_path)
    try:
        time.sleep(3)
        killed = time.time()
        stack.kill_node(victim)

        def restored() -> bool:
            states = ha_states(stack, router_id)
            return victim not in states and sorted(states.values()) == ["active", "standby"]

        wait_for("l3ha to replace the dead replica", restored, 150, 1)
        restored_after = time.time() - killed
    finally:
        log = watch.stop()
        reach = pingers.stop()
    dark = reach[name]
    print(f"\nHA node death ({victim}): {name} dark {dark.dark_seconds:.1f} s (VRRP), "
          f"redundancy restored {restored_after:.1f} s after the kill")  # fmt: skip
    assert dark.longest < 15.0, dark
    active = [h for h, s in ha_states(stack, router_id).items() if s == "active"]
    wait_for("the VIP on the active replica",
             lambda: vip_holders(stack, router_id, vip) == active, 30)  # fmt: skip
    findings = [f for f in audit(stack, tmp_path) if f.get("router") in (router_id, name)]
    assert findings == [], (findings, log[-2000:])
