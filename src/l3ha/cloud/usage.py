"""What routers use, read for measured weights: interface ports and floating IPs per router.

I/O: HTTP to Neutron, through the adapter's paged collection reader (so the
adapter's retries, error translation and ``<key>_links`` paging apply). Each
reading is one listing for the whole cloud, followed page by page, never a
call per router:

- ``GET /v2.0/ports?device_owner=network:router_interface&device_owner=...&fields=device_id``
  (repeated ``device_owner`` filters are OR-ed by Neutron; HA routers' interfaces
  are ``network:ha_router_replicated_interface``, DVR routers'
  ``network:router_interface_distributed``);
- ``GET /v2.0/floatingips?fields=router_id`` (an unassociated floating IP has
  ``router_id`` null and counts for no router).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

#: ``device_owner`` of a router's interface ports (legacy, HA, DVR).
INTERFACE_OWNERS = (
    "network:router_interface",
    "network:ha_router_replicated_interface",
    "network:router_interface_distributed",
)

#: ``NeutronApi.collection(path, key, what, params)``: every item of a paged listing.
CollectionReader = Callable[[str, str, str, Sequence[tuple[str, str]]], list[dict[str, Any]]]


class RouterUsage:
    """The two readings over one cloud's collection reader (``NeutronCloud.usage()``)."""

    def __init__(self, read: CollectionReader) -> None:
        self._read = read

    def interface_counts(self) -> dict[str, int]:
        """Router id -> number of interface ports, from one paged listing of ports."""
        params = [("device_owner", owner) for owner in INTERFACE_OWNERS]
        params.append(("fields", "device_id"))
        ports = self._read("/ports", "ports", "list router interface ports", params)
        return _count(port.get("device_id") for port in ports)

    def floating_ip_counts(self) -> dict[str, int]:
        """Router id -> number of floating IPs associated behind it, from one paged listing."""
        fips = self._read(
            "/floatingips", "floatingips", "list floating IPs", [("fields", "router_id")]
        )
        return _count(fip.get("router_id") for fip in fips)


def _count(router_ids: Any) -> dict[str, int]:
    return dict(Counter(str(r) for r in router_ids if isinstance(r, str) and r))
