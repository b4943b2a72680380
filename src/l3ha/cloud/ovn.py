"""Neutron's L3 scheduler on ML2/OVN: gateway chassis and their priorities. I/O: HTTP to Neutron.

``NeutronOvn`` wraps a ``NeutronCloud`` and sends its requests through the adapter's
own plumbing (``NeutronCloud.api``), so the retry policy, the ``--api-rate`` cap, the
error translation and the pagination apply here too. The calls (docs/ovn.md):

- ``GET /agents?agent_type=OVN Controller Gateway agent``: the gateway chassis.
- ``GET /routers/{R}/l3-agents``: a router's chassis with ``ha_chassis_priority``, in no
  particular order (``OvnSnapshot.group`` sorts them).
- ``GET /ports?device_owner=network:router_gateway``: the routers' gateway ports and
  their binding (``binding:host_id``, ``binding:vif_type``), for ``l3ha check``.
- ``POST /agents/{C}/l3-routers {"router_id": R, "ha_chassis_priority": N}`` (without a
  priority Neutron adds at the group's lowest minus one); ``PUT .../l3-routers/{R}
  {"ha_chassis_priority": N}`` (409 when another chassis of the group has N); ``DELETE``.

Every write reads the router's group back and raises ``ReadBackError`` when the write
did not hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from l3ha.clock import Clock, SystemClock
from l3ha.cloud.adapter import NeutronCloud
from l3ha.cloud.transport import quoted
from l3ha.errors import ReadBackError
from l3ha.model import Agent
from l3ha.ovn_model import (
    GATEWAY_AGENT_TYPE,
    Backend,
    GatewayBinding,
    GatewayPort,
    OvnSnapshot,
    detect_backend,
)

ROUTER_GATEWAY_OWNER = "network:router_gateway"


def bindings_from_router_agents(router_id: str, raw: list[dict[str, Any]]) -> list[GatewayBinding]:
    """A router's group from ``GET /routers/{R}/l3-agents`` on ML2/OVN."""
    return [
        GatewayBinding(router_id, str(a["id"]), int(a.get("ha_chassis_priority") or 0))
        for a in raw
        if a.get("agent_type") == GATEWAY_AGENT_TYPE
    ]


class NeutronOvn:
    """Gateway chassis reads and priority writes over a ``NeutronCloud`` (module docstring)."""

    def __init__(self, cloud: NeutronCloud, *, clock: Clock | None = None) -> None:
        self._cloud = cloud
        self._clock = clock or SystemClock()
        self.name = cloud.name

    @property
    def cloud(self) -> NeutronCloud:
        """The cloud underneath (routers, ports, usage for measured weights)."""
        return self._cloud

    # --- reads ----------------------------------------------------------------

    def backend(self, wanted: Backend = Backend.AUTO) -> Backend:
        """The kind of cloud: ``wanted`` unless AUTO, else told from the listed agent types."""
        if wanted is not Backend.AUTO:
            return wanted
        raw = self._cloud.api.collection("/agents", "agents", "list agents")
        return detect_backend(str(a.get("agent_type") or "") for a in raw)

    def list_chassis(self) -> list[Agent]:
        """Every gateway chassis, as agents."""
        return self._cloud.agents_of_type(GATEWAY_AGENT_TYPE, "list gateway chassis")

    def group(self, router_id: str) -> list[GatewayBinding]:
        """One router's chassis and priorities, read fresh."""
        what = f"list gateway chassis of router {router_id}"
        path = f"/routers/{quoted(router_id)}/l3-agents"
        return bindings_from_router_agents(
            router_id, self._cloud.api.collection(path, "agents", what)
        )

    def groups(self, router_ids: list[str]) -> dict[str, list[GatewayBinding]]:
        """Several routers' groups, read fresh (one call per router, concurrently)."""
        return dict(
            zip(router_ids, self._cloud.api.concurrently(self.group, router_ids), strict=True)
        )

    def read_ovn_snapshot(self) -> OvnSnapshot:
        """Chassis, routers and every router's group (one call per router, concurrently)."""
        observed_at = self._clock.wall().isoformat()
        api = self._cloud.api
        chassis, routers = api.both(self.list_chassis, self._cloud.list_routers)
        groups = api.concurrently(self.group, [r.id for r in routers])
        known = {c.id for c in chassis}
        bindings = [b for group in groups for b in group if b.chassis_id in known]
        return OvnSnapshot(tuple(chassis), tuple(routers), tuple(bindings), observed_at)

    def gateway_ports(self) -> list[GatewayPort]:
        """Every router gateway port with its binding (one paged listing)."""
        raw = self._cloud.api.collection(
            "/ports", "ports", "list router gateway ports", [("device_owner", ROUTER_GATEWAY_OWNER)]
        )
        return [
            GatewayPort(
                str(p.get("device_id") or ""),
                str(p.get("id") or ""),
                str(p.get("binding:host_id") or ""),
                str(p.get("binding:vif_type") or ""),
            )
            for p in raw
            if p.get("device_owner") == ROUTER_GATEWAY_OWNER
        ]

    # --- writes (each read back) ----------------------------------------------

    def add(self, router_id: str, chassis_id: str, priority: int | None) -> list[GatewayBinding]:
        """Add the chassis to the router's group (at ``priority``, else Neutron's lowest)."""
        body: dict[str, Any] = {"router_id": router_id}
        if priority is not None:
            body["ha_chassis_priority"] = priority
        what = f"add gateway chassis {chassis_id} to router {router_id}"
        self._cloud.api.request("POST", f"/agents/{quoted(chassis_id)}/l3-routers", what, body=body)
        return self._expect(router_id, chassis_id, priority, what)

    def set_priority(self, router_id: str, chassis_id: str, priority: int) -> list[GatewayBinding]:
        """Give the chassis ``priority`` in the router's group."""
        what = f"set priority {priority} of gateway chassis {chassis_id} for router {router_id}"
        path = f"/agents/{quoted(chassis_id)}/l3-routers/{quoted(router_id)}"
        self._cloud.api.request("PUT", path, what, body={"ha_chassis_priority": priority})
        return self._expect(router_id, chassis_id, priority, what)

    def remove(self, router_id: str, chassis_id: str) -> list[GatewayBinding]:
        """Remove the chassis from the router's group."""
        what = f"remove gateway chassis {chassis_id} from router {router_id}"
        path = f"/agents/{quoted(chassis_id)}/l3-routers/{quoted(router_id)}"
        self._cloud.api.request("DELETE", path, what)
        return self._expect(router_id, chassis_id, None, what, present=False)

    def _expect(
        self,
        router_id: str,
        chassis_id: str,
        priority: int | None,
        what: str,
        present: bool = True,
    ) -> list[GatewayBinding]:
        group = self.group(router_id)
        found: Mapping[str, int] = {b.chassis_id: b.priority for b in group}
        held = (chassis_id in found) == present
        if held and present and priority is not None:
            held = found[chassis_id] == priority
        if not held:
            seen = ", ".join(f"{c}={p}" for c, p in sorted(found.items())) or "none"
            raise ReadBackError(f"{what}: accepted, but reading back shows the group {seen}")
        return group
