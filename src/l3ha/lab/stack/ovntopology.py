"""The OVN stack's routers in Neutron, and what the client reaches. I/O: HTTP, ping.

One flat external network on ``physnet1`` (169.254.96.0/20, the client at .1);
per router a geneve tenant network (a /28 of 169.254.112.0/20) on its interface,
and its gateway on the external network, which Neutron's OVN driver schedules
over the gateway chassis (Gateway_Chassis rows, one priority per chassis). The
routers are created a few at a time (the API server is threaded).
"""

from __future__ import annotations

import itertools
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from l3ha.lab.stack.ovnspec import (
    OVN_CLIENT_NS,
    OvnSpec,
    ovn_tenant_cidr,
    ovn_tenant_router_ip,
)
from l3ha.lab.stack.spec import router_name
from l3ha.lab.stack.topology import NeutronHttp, create_external, pings

CREATE_WORKERS = 4  # routers created at once: a serial 90-router bring-up took 17 min


def _router(api: NeutronHttp, index: int, external_id: str) -> dict[str, Any]:
    """Router ``rINDEX`` with its tenant network and gateway; its name, id, gateway port and IP."""
    network = api.post("networks", {"network": {"name": f"l3ov-net{index}"}})["network"]
    subnet = api.post("subnets", {"subnet": {
        "network_id": network["id"], "ip_version": 4, "cidr": ovn_tenant_cidr(index),
        "gateway_ip": ovn_tenant_router_ip(index), "enable_dhcp": False,
    }})["subnet"]  # fmt: skip
    router = api.post("routers", {"router": {
        "name": router_name(index), "external_gateway_info": {"network_id": external_id},
    }})["router"]  # fmt: skip
    api.put(f"routers/{router['id']}/add_router_interface", {"subnet_id": subnet["id"]})
    port = api.get(f"ports?device_id={router['id']}&device_owner=network:router_gateway")
    gateway = port["ports"][0]
    return {
        "name": router_name(index),
        "id": str(router["id"]),
        "gateway_port": str(gateway["id"]),
        "gateway_ip": str(gateway["fixed_ips"][0]["ip_address"]),
    }


def create_ovn_topology(api: NeutronHttp, spec: OvnSpec) -> list[dict[str, Any]]:
    external_id = create_external(api, "l3ov-external")
    with ThreadPoolExecutor(max_workers=CREATE_WORKERS) as pool:
        return list(pool.map(lambda k: _router(api, k, external_id), spec.router_indexes))


def add_floating_ip(api: NeutronHttp, router: dict[str, Any]) -> str:
    """A port on the router's tenant network given a floating IP of the external network
    (what makes the router busy by ``--busy-fips``); the floating address."""
    found = api.get(f"ports?device_id={router['id']}&device_owner=network:router_interface")
    network_id = found["ports"][0]["network_id"]
    port = api.post("ports", {"port": {"network_id": network_id,
                                       "name": f"l3ov-fip-{router['name']}"}})["port"]  # fmt: skip
    external = api.get("networks?router:external=True")["networks"][0]["id"]
    fip = api.post("floatingips", {"floatingip": {
        "floating_network_id": external, "port_id": port["id"],
    }})["floatingip"]  # fmt: skip
    return str(fip["floating_ip_address"])


def raise_chassis(api: NeutronHttp, router_id: str, agent_id: str) -> bool:
    """Put the gateway chassis (agent id) above every chassis of the router's group, as an
    operator would by hand (one graceful move); False when it is on top already."""
    agents = api.get(f"routers/{router_id}/l3-agents")["agents"]
    priorities = {a["id"]: int(a["ha_chassis_priority"]) for a in agents}
    if priorities.get(agent_id) == max(priorities.values(), default=-1):
        return False
    body = {"ha_chassis_priority": max(priorities.values(), default=0) + 1}
    if agent_id in priorities:
        api.put(f"agents/{agent_id}/l3-routers/{router_id}", body)
    else:
        api.post(f"agents/{agent_id}/l3-routers", {"router_id": router_id, **body})
    return True


def reachable(address: str, timeout_s: int = 1) -> bool:
    """One echo from the client namespace to ``address`` answered."""
    return pings(OVN_CLIENT_NS, address, timeout_s)


def longest_silence(address: str, seconds: float, action: Callable[[], None]) -> float:
    """Ping ``address`` from the client every 0.1 s for ``seconds`` while ``action`` runs;
    the longest time between two answers (or from the start/to the end), in seconds."""
    return longest_silences([address], seconds, action)[address]


def longest_silences(
    addresses: list[str],
    seconds: float,
    action: Callable[[], None],
    stop_after: float | None = None,
) -> dict[str, float]:
    """``longest_silence`` of several addresses at once, each pinged by its own ``ping``.
    With ``stop_after`` the pings stop that many seconds after ``action`` returns (``seconds``
    then only bounds them): the window is as long as the action."""
    gaps = longest_gaps(addresses, seconds, action, stop_after)
    return {a: stop - start for a, (start, stop) in gaps.items()}


def longest_gaps(
    addresses: list[str],
    seconds: float,
    action: Callable[[], None],
    stop_after: float | None = None,
) -> dict[str, tuple[float, float]]:
    """``longest_silences``, each address's longest gap as epoch seconds: (the answer before
    it, or the start; the answer that ended it, or the end).

    Each ``ping`` writes to a file of its own: read through pipes, the pings not read first
    would block once their pipe is full (about 80 s of replies) and show a silence that
    never was."""
    began = time.time()
    with tempfile.TemporaryDirectory(prefix="l3ov-ping-") as directory:
        files = {a: Path(directory, f"{i}.out") for i, a in enumerate(addresses)}
        pings = {a: _start_ping(a, seconds, files[a]) for a in addresses}
        try:
            action()
            if stop_after is not None:
                time.sleep(stop_after)
                for ping in pings.values():
                    ping.send_signal(signal.SIGINT)  # ping prints what it has and exits
            ended = min(time.time(), began + seconds)
            for ping in pings.values():
                ping.wait(timeout=seconds + 30)
        finally:
            for ping in pings.values():
                if ping.poll() is None:
                    ping.kill()
                    ping.wait()
        outs = {a: f.read_text() for a, f in files.items()}
    end = began + seconds if stop_after is None else ended
    return {a: _gap(out, began, end) for a, out in outs.items()}


def _start_ping(address: str, seconds: float, out: Path) -> subprocess.Popen[bytes]:
    argv = ["ip", "netns", "exec", OVN_CLIENT_NS, "ping", "-n", "-D", "-i", "0.1", "-W", "1",
            "-w", str(int(seconds)), address]  # fmt: skip
    with open(out, "wb") as sink:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(argv, stdout=sink, stderr=subprocess.DEVNULL)


def _gap(out: str, began: float, end: float) -> tuple[float, float]:
    answers = [float(line[1:].split("]", 1)[0]) for line in out.splitlines()
               if line.startswith("[") and "bytes from" in line]  # fmt: skip
    marks = [began, *answers, end]
    return max(itertools.pairwise(marks), key=lambda pair: pair[1] - pair[0])
