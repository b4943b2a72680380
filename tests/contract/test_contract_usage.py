"""Contract: the cloud-wide listings measured weights rely on (``l3ha.cloud.usage``).

Interface ports by repeated ``device_owner`` filters reduced to ``device_id``,
paged; floating IPs reduced to ``router_id``; and the adapter's counts over
both. Held against the emulator and a real Neutron server.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from tests.contract.contract_http import Api

from l3ha.cloud.adapter import NeutronCloud
from l3ha.cloud.usage import INTERFACE_OWNERS

OWNERS = "".join(f"&device_owner={owner}" for owner in INTERFACE_OWNERS)


def _all_pages(api: Api, path: str, key: str, limit: int = 2) -> list[dict[str, Any]]:
    """Every item of a listing, page by page through ``<key>_links`` (bounded)."""
    items: list[dict[str, Any]] = []
    url = f"{path}&limit={limit}"
    for _ in range(10_000):
        reply = api.get(url)
        assert reply.status == 200, reply.text
        body = reply.json()
        items += body[key]
        following = [link for link in body.get(f"{key}_links", []) if link["rel"] == "next"]
        if not following or not body[key]:
            return items
        parts = urlsplit(following[0]["href"])
        url = f"{parts.path}?{parts.query}"
    raise AssertionError("pagination did not end")


def test_interface_ports_listed_by_owner_carry_only_the_router_id(api: Api, backend: Any) -> None:
    router = backend.router_with_usage(interfaces=3, floating_ips=0)
    reply = api.get(f"/v2.0/ports?fields=device_id{OWNERS}")
    assert reply.status == 200
    ports = reply.json()["ports"]
    assert all(set(port) == {"device_id"} for port in ports)
    assert sum(1 for port in ports if port["device_id"] == router) == 3
    every = api.get(f"/v2.0/ports?device_id={router}&fields=device_owner").json()["ports"]
    assert "network:router_gateway" in {port["device_owner"] for port in every}


def test_interface_ports_page_with_the_fields_kept_to_the_router_id(api: Api, backend: Any) -> None:
    router = backend.router_with_usage(interfaces=3, floating_ips=0)
    ports = _all_pages(api, f"/v2.0/ports?fields=device_id{OWNERS}", "ports")
    assert all(set(port) == {"device_id"} for port in ports)
    assert sum(1 for port in ports if port["device_id"] == router) == 3
    whole = api.get(f"/v2.0/ports?fields=device_id{OWNERS}").json()["ports"]
    assert len(ports) == len(whole)


def test_floating_ips_listed_with_only_their_router_id(api: Api, backend: Any) -> None:
    router = backend.router_with_usage(interfaces=1, floating_ips=2)
    reply = api.get("/v2.0/floatingips?fields=router_id")
    assert reply.status == 200
    fips = reply.json()["floatingips"]
    assert all(set(fip) == {"router_id"} for fip in fips)
    assert sum(1 for fip in fips if fip["router_id"] == router) == 2
    paged = _all_pages(api, "/v2.0/floatingips?fields=router_id", "floatingips")
    assert len(paged) == len(fips)


def test_the_adapter_counts_ports_and_floating_ips_per_router(conn: Any, backend: Any) -> None:
    router = backend.router_with_usage(interfaces=2, floating_ips=1)
    usage = NeutronCloud(conn).usage()
    assert usage.interface_counts()[router] == 2
    assert usage.floating_ip_counts()[router] == 1
