"""Where a gateway's outage goes: polls OVN and Neutron while a bench acts. I/O: ovn-*ctl,
the northbound socket, HTTP.

``GatewayTrace`` polls, every ``interval`` seconds until stopped, for every router of the
stack: the highest-priority chassis of its northbound gateway chassis (``written``: what
l3ha's write changed), the chassis the southbound binds its ``cr-lrp`` port to, the
northbound ``hosting-chassis`` status of its gateway router port (OVN 23.09 and later), and the
``binding:host_id`` Neutron shows on its gateway port. It keeps the first time each one
showed each value, so a bench can line up when l3ha wrote a move, when OVN and Neutron saw
it, and when the gateway answered again (``bench_ovn.py --trace``).
"""

from __future__ import annotations

import csv
import io
import threading
import time
from typing import Any

from l3ha.cloud.ovn_nb import NbAddress, NorthboundReader
from l3ha.errors import CloudError
from l3ha.lab.stack.ovnstack import OvnStack

SIGNALS = ("written", "sb", "nb", "neutron")


class GatewayTrace:
    """Per router and signal: [(epoch second first seen, value), ...] in order of change."""

    def __init__(self, stack: OvnStack, interval: float = 0.25) -> None:
        self.stack = stack
        self.interval = interval
        self.seen: dict[tuple[str, str], list[tuple[float, str]]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._port_router = {f"lrp-{r['gateway_port']}": r["name"] for r in stack.routers}
        self._router_by_id = {r["id"]: r["name"] for r in stack.routers}
        self._chassis: dict[str, str] = {}
        self._nb_reader = NorthboundReader(NbAddress(path=str(stack.central.nb)))
        self._nb_readable = True

    def __enter__(self) -> GatewayTrace:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def changed_to(self, router: str, signal: str, value: str, after: float) -> float | None:
        """When ``signal`` of ``router`` first showed ``value`` at or after ``after``."""
        for when, seen in self.seen.get((router, signal), []):
            if seen == value and when >= after:
                return when
        return None

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.time()
            readers = (self._written, self._sb, self._nb, self._neutron)
            for signal, read in zip(SIGNALS, readers, strict=True):
                try:
                    values = read()
                except Exception:  # a busy database or server: this poll has no reading
                    continue
                for router, value in values.items():
                    history = self.seen.setdefault((router, signal), [])
                    if not history or history[-1][1] != value:
                        history.append((now, value))
            self._stop.wait(self.interval)

    def _rows(self, text: str) -> list[list[str]]:
        return list(csv.reader(io.StringIO(text)))[1:]

    def _chassis_name(self, uuid: str) -> str:
        if uuid and uuid not in self._chassis:
            name = self.stack.central.sbctl("get", "Chassis", uuid, "name")
            self._chassis[uuid] = name.strip().strip('"')
        return self._chassis.get(uuid, "")

    def _sb(self) -> dict[str, str]:
        text = self.stack.central.sbctl("--format=csv", "--columns=logical_port,chassis",
                                        "find", "Port_Binding", "type=chassisredirect")  # fmt: skip
        out = {}
        for port, chassis in self._rows(text):
            router = self._port_router.get(port.removeprefix("cr-"))
            if router is not None:
                out[router] = self._chassis_name(chassis)
        return out

    def _written(self) -> dict[str, str]:
        """The highest-priority chassis of each gateway port's HA chassis group."""
        nbctl = self.stack.central.nbctl
        ports = self._rows(nbctl("--format=csv", "--columns=name,ha_chassis_group", "list",
                                 "Logical_Router_Port"))  # fmt: skip
        groups = self._rows(nbctl("--format=csv", "--columns=_uuid,ha_chassis", "list",
                                  "HA_Chassis_Group"))  # fmt: skip
        members = self._rows(nbctl("--format=csv", "--columns=_uuid,chassis_name,priority",
                                   "list", "HA_Chassis"))  # fmt: skip
        chassis = {uuid: (int(priority), name) for uuid, name, priority in members}
        best = {
            uuid: max((chassis[m] for m in _uuids(inside) if m in chassis), default=(-1, ""))[1]
            for uuid, inside in groups
        }
        out = {}
        for name, group in ports:
            router = self._port_router.get(name)
            if router is not None and group in best:
                out[router] = best[group]
        return out

    def _nb(self) -> dict[str, str]:
        """hosting-chassis, read as ``l3ha drain --ovn-nb`` reads it (none on OVN 23.03)."""
        if not self._nb_readable:
            return {}
        try:
            hosting = self._nb_reader.hosting()
        except CloudError:  # no status column: this OVN has no hosting-chassis to trace
            self._nb_readable = False
            return {}
        return {self._port_router[n]: c for n, c in hosting.items() if n in self._port_router}

    def _neutron(self) -> dict[str, str]:
        ports: list[dict[str, Any]] = self.stack.api.get(
            "ports?device_owner=network:router_gateway"
        )["ports"]
        return {
            self._router_by_id[p["device_id"]]: p.get("binding:host_id") or ""
            for p in ports
            if p["device_id"] in self._router_by_id
        }


def _uuids(text: str) -> list[str]:
    """The uuids of a set column as ovn-nbctl's CSV prints it (one, or ``[a, b]``)."""
    return [u.strip() for u in text.strip("[]").split(",") if u.strip()]
