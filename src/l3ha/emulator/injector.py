"""Applying faults to a running emulator: one table from fault kind to what it does.

I/O: none of its own, except sleeping for an injected API latency; callers
hold ``world.lock`` where the table says so (``apply`` takes it itself).

``FAULTS`` maps every kind of ``l3ha.emulator.faults.FAULT_ARGS`` to the
function that applies it: agent faults go to the simulation's agent lifecycle
(``sim_agents``), API faults (errors, latency, outage) are state kept here and
consulted by the HTTP front (``injected_response``). ``FaultInjector`` also carries one helper
per kind for tests and benchmarks (``emu.faults.kill_agent("net-1")``), all
of which go through the same table as ``POST /_emulator/faults``.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Mapping
from typing import Any

from l3ha.clock import Clock
from l3ha.emulator.faults import AGENT_KINDS, FAULT_ARGS, Fault, FaultError, Step, parse_fault
from l3ha.emulator.query import ApiError
from l3ha.emulator.records import DHCP_AGENT, AgentRec, RouterRec
from l3ha.emulator.sim import Simulation
from l3ha.emulator.sim_agents import AgentLifecycle
from l3ha.emulator.sim_ovn import OvnSimulation
from l3ha.emulator.world import World

STATUS_TYPES = {
    400: "HTTPBadRequest",
    401: "HTTPUnauthorized",
    403: "HTTPForbidden",
    404: "HTTPNotFound",
    409: "HTTPConflict",
    429: "HTTPTooManyRequests",
    500: "HTTPInternalServerError",
    502: "HTTPBadGateway",
    503: "HTTPServiceUnavailable",
    504: "HTTPGatewayTimeout",
}

Apply = Callable[["FaultInjector", Mapping[str, Any]], dict[str, Any] | None]


def _agent_fault(action: Callable[..., None], *names: str) -> Apply:
    """A fault on one agent named by ``host`` (or id), given the arguments ``names``."""

    def apply(inj: FaultInjector, args: Mapping[str, Any]) -> None:
        action(inj.sim.lifecycle, inj.agent(args["host"]), *(args[name] for name in names))

    return apply


def _process_fault(action: Callable[[AgentLifecycle, AgentRec], None]) -> Apply:
    """stop-agent/start-agent: the agent named by id, else the host's agents of ``agents``
    (l3, the default; dhcp; all)."""

    def apply(inj: FaultInjector, args: Mapping[str, Any]) -> None:
        for agent in inj.process_agents(args["host"], args.get("agents", AGENT_KINDS[0])):
            action(inj.sim.lifecycle, agent)

    return apply


def _router(inj: FaultInjector, ref: str) -> RouterRec | None:
    """A router by id or name."""
    return inj.world.routers.get(ref) or next(
        (r for r in inj.world.routers.values() if r.name == ref), None
    )


def _split_brain(inj: FaultInjector, args: Mapping[str, Any]) -> dict[str, Any]:
    ref = args["router"]
    router = _router(inj, ref)
    if router is None or not router.ha:
        raise FaultError(f"unknown HA router {ref!r}", status=404)
    masters = inj.sim.vrrp.split_brain(router, args.get("seconds", 3600.0))
    return {"fault": "split-brain", "router": router.id, "active": masters}


def _broker_outage(inj: FaultInjector, args: Mapping[str, Any]) -> None:
    inj.sim.lifecycle.broker_outage(args["seconds"], args.get("spread", 0.0))


def _api_errors(inj: FaultInjector, args: Mapping[str, Any]) -> None:
    inj.error_rate, inj.error_status = args["rate"], args["status"]


def _api_latency(inj: FaultInjector, args: Mapping[str, Any]) -> None:
    inj.latency_ms = args["ms"]


def _api_outage(inj: FaultInjector, args: Mapping[str, Any]) -> None:
    inj.outage_until = inj.clock.monotonic() + args["seconds"]


def _ovn(inj: FaultInjector) -> OvnSimulation:
    if inj.ovn is None:
        raise FaultError("this fault needs the emulator's OVN mode (--ovn)")
    return inj.ovn


def _chassis(inj: FaultInjector, name: str) -> str:
    """A gateway chassis' name; FaultError 404 when there is none."""
    if name not in _ovn(inj).ovn.chassis:
        raise FaultError(f"unknown chassis {name!r}", status=404)
    return name


def _chassis_fault(action: Callable[[OvnSimulation, str], None]) -> Apply:
    def apply(inj: FaultInjector, args: Mapping[str, Any]) -> None:
        action(_ovn(inj), _chassis(inj, args["chassis"]))

    return apply


def _sb_outage(inj: FaultInjector, args: Mapping[str, Any]) -> None:
    _ovn(inj).sb_outage(args["seconds"])


def _gateway_unbound(inj: FaultInjector, args: Mapping[str, Any]) -> dict[str, Any]:
    ref = args["router"]
    router = _router(inj, ref)
    if router is None:
        raise FaultError(f"unknown router {ref!r}", status=404)
    _ovn(inj).fail_binding(router)
    return {"fault": "gateway-unbound", "router": router.id}


#: Every fault kind and the function that applies it (returning None: echo the fault).
FAULTS: dict[str, Apply] = {
    "kill-agent": _agent_fault(AgentLifecycle.kill),
    "revive-agent": _agent_fault(AgentLifecycle.revive),
    "stop-agent": _process_fault(AgentLifecycle.stop_agent),
    "start-agent": _process_fault(AgentLifecycle.start_agent),
    "broker-outage": _broker_outage,
    "mgmt-partition": _agent_fault(AgentLifecycle.mgmt_partition, "seconds"),
    "dataplane-fail": _agent_fault(AgentLifecycle.dataplane_fail),
    "slow-agent": _agent_fault(AgentLifecycle.slow_agent, "factor"),
    "api-errors": _api_errors,
    "api-latency": _api_latency,
    "api-outage": _api_outage,
    "split-brain": _split_brain,
    "kill-chassis": _chassis_fault(OvnSimulation.kill_chassis),
    "revive-chassis": _chassis_fault(OvnSimulation.revive_chassis),
    "sb-outage": _sb_outage,
    "gateway-unbound": _gateway_unbound,
}
assert set(FAULTS) == set(FAULT_ARGS), "every fault kind needs exactly one entry"


class FaultInjector:
    """Applies faults (see the module docstring) and keeps the API faults' state."""

    def __init__(self, world: World, sim: Simulation, clock: Clock, seed: int) -> None:
        self.world = world
        self.sim = sim
        self.clock = clock
        self.rng = random.Random(seed)
        self.error_rate = 0.0
        self.error_status = 500
        self.latency_ms = 0.0
        self.outage_until = 0.0
        self.ovn: OvnSimulation | None = None

    def agent(self, host: str) -> AgentRec:
        """The agent on ``host`` (or with that id); FaultError 404 when there is none."""
        agent = self.world.agents_by_host.get(host) or self.world.agents.get(host)
        if agent is None:
            raise FaultError(f"unknown agent host {host!r}", status=404)
        return agent

    def process_agents(self, ref: str, kinds: str) -> list[AgentRec]:
        """The agents a process fault acts on: the one with id ``ref``, else those of host
        ``ref`` of ``kinds``; FaultError 404 when there is none."""
        by_id = self.world.agents.get(ref)
        if by_id is not None:
            return [by_id]
        node = self.world.agents_by_host.get(ref)
        if node is None:
            raise FaultError(f"unknown agent host {ref!r}", status=404)
        agents = self.world.node_agents(node)
        chosen = [
            a
            for a in agents
            if kinds == "all" or (a.agent_type == DHCP_AGENT) == (kinds == "dhcp")
        ]
        if not chosen:
            raise FaultError(f"host {ref!r} has no {kinds} agent", status=404)
        return chosen

    def apply(self, fault: Fault) -> dict[str, Any]:
        """Apply one validated fault; return what was done."""
        with self.world.lock:
            done = FAULTS[fault.kind](self, fault.args)
        return done if done is not None else {"fault": fault.kind, **fault.args}

    def fault(self, kind: str, **args: Any) -> dict[str, Any]:
        """Validate and apply ``{"fault": kind, **args}``."""
        return self.apply(parse_fault({"fault": kind, **args}))

    def schedule(self, steps: list[Step], origin: float) -> None:
        """Apply each step at ``origin + step.at`` (monotonic); unknown hosts fail now."""
        for step in steps:
            if "host" in step.fault.args:
                self.agent(step.fault.args["host"])
            if "chassis" in step.fault.args:
                _chassis(self, step.fault.args["chassis"])
        with self.world.lock:
            for step in steps:
                self.sim.schedule(origin + step.at, self._scheduled, step)

    def _scheduled(self, step: Step) -> None:
        with contextlib.suppress(FaultError):
            FAULTS[step.fault.kind](self, step.fault.args)  # the simulation holds the lock

    def api_outage_now(self) -> bool:
        return self.clock.monotonic() < self.outage_until

    def injected_response(self) -> tuple[int, dict[str, Any]] | None:
        """The injected answer to an API call (latency first), or None to serve it."""
        if self.latency_ms > 0:
            time.sleep(self.latency_ms / 1000.0)
        if self.api_outage_now():
            return 503, ApiError(
                503, "HTTPServiceUnavailable", "The server is currently unavailable."
            ).body()
        if self.error_rate > 0 and self.rng.random() < self.error_rate:
            status = self.error_status
            kind = STATUS_TYPES.get(status, "HTTPError")
            return status, ApiError(status, kind, "Injected fault.").body()
        return None

    # --- one helper per kind (tests, benchmarks) ---------------------------------------

    def kill_agent(self, host: str) -> None:
        self.fault("kill-agent", host=host)

    def revive_agent(self, host: str) -> None:
        self.fault("revive-agent", host=host)

    def stop_agent(self, host: str, agents: str = AGENT_KINDS[0]) -> None:
        self.fault("stop-agent", host=host, agents=agents)

    def start_agent(self, host: str, agents: str = AGENT_KINDS[0]) -> None:
        self.fault("start-agent", host=host, agents=agents)

    def broker_outage(self, seconds: float, spread: float = 0.0) -> None:
        self.fault("broker-outage", seconds=seconds, spread=spread)

    def mgmt_partition(self, host: str, seconds: float) -> None:
        self.fault("mgmt-partition", host=host, seconds=seconds)

    def dataplane_fail(self, host: str) -> None:
        self.fault("dataplane-fail", host=host)

    def slow_agent(self, host: str, factor: float) -> None:
        self.fault("slow-agent", host=host, factor=factor)

    def api_errors(self, rate: float, status: int = 500) -> None:
        self.fault("api-errors", rate=rate, status=status)

    def api_latency(self, ms: float) -> None:
        self.fault("api-latency", ms=ms)

    def api_outage(self, seconds: float) -> None:
        self.fault("api-outage", seconds=seconds)

    def kill_chassis(self, chassis: str) -> None:
        self.fault("kill-chassis", chassis=chassis)

    def revive_chassis(self, chassis: str) -> None:
        self.fault("revive-chassis", chassis=chassis)

    def sb_outage(self, seconds: float) -> None:
        self.fault("sb-outage", seconds=seconds)

    def gateway_unbound(self, router: str) -> None:
        self.fault("gateway-unbound", router=router)

    def split_brain(self, router_id: str, seconds: float = 3600.0) -> int:
        return int(self.fault("split-brain", router=router_id, seconds=seconds)["active"])
