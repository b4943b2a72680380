"""Fault kinds of the emulator, their arguments, and scenario files.

I/O: only ``load_scenario`` (reads a file).

A fault is a kind plus named arguments, e.g. ``{"fault": "kill-agent", "host": "net-1"}``.
The same description arrives from ``POST /_emulator/faults``, from
``l3ha emulator fault KIND ARGS...`` (positional arguments in the order of
``FAULT_ARGS``) and from timed steps of a ``--scenario`` file
(``[{at: SECONDS, fault: KIND, ...args}]``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

# kind -> ordered (name, type) of its arguments; a trailing "?" marks an optional one.
FAULT_ARGS: dict[str, list[tuple[str, type]]] = {
    "kill-agent": [("host", str)],
    "revive-agent": [("host", str)],
    "stop-agent": [("host", str), ("agents?", str)],
    "start-agent": [("host", str), ("agents?", str)],
    "broker-outage": [("seconds", float), ("spread?", float)],
    "mgmt-partition": [("host", str), ("seconds", float)],
    "dataplane-fail": [("host", str)],
    "slow-agent": [("host", str), ("factor", float)],
    "api-errors": [("rate", float), ("status", int)],
    "api-latency": [("ms", float)],
    "api-outage": [("seconds", float)],
    "split-brain": [("router", str), ("seconds?", float)],
    "kill-chassis": [("chassis", str)],
    "revive-chassis": [("chassis", str)],
    "sb-outage": [("seconds", float)],
    "gateway-unbound": [("router", str)],
}

#: Which agents of a host stop-agent/start-agent act on (the first is the default).
AGENT_KINDS = ("l3", "dhcp", "all")

FAULT_HELP = {
    "kill-agent": "HOST: the node dies (no heartbeats, no forwarding)",
    "revive-agent": "HOST: the node restarts (new started_at, resync of its routers)",
    "stop-agent": "HOST [l3|dhcp|all]: the host's agent process stops (an upgrade; default its "
    "L3 agent, 'all' its DHCP agent too; HOST may be an agent id): no heartbeats, no binding "
    "changes reach it, its routers keep forwarding and its networks keep serving DHCP",
    "start-agent": "HOST [l3|dhcp|all]: the stopped agent process starts (new started_at): it "
    "reports and resyncs at once, or, while the message bus is down, only once it reaches it",
    "broker-outage": "SECONDS [SPREAD]: every agent loses the message bus (no heartbeats, "
    "no binding changes reach it, forwarding goes on), then they reconnect one by one over "
    "SPREAD seconds (default 0) in an order drawn from the seed",
    "mgmt-partition": "HOST SECONDS: the host loses the message bus (no heartbeats, no "
    "binding changes reach it), forwarding goes on",
    "dataplane-fail": "HOST: heartbeats go on, forwarding stops",
    "slow-agent": "HOST FACTOR: the agent processes routers FACTOR times slower",
    "api-errors": "RATE STATUS: answer RATE (0..1) of API calls with STATUS",
    "api-latency": "MS: delay every API answer by MS milliseconds",
    "api-outage": "SECONDS: answer every API call with 503",
    "split-brain": "ROUTER [SECONDS]: every live replica of an HA router turns active",
    "kill-chassis": "CHASSIS: (--ovn) a gateway chassis crashes: no nb_cfg answers, its "
    "gateways fail over once BFD notices (ovn_bfd_detection_time)",
    "revive-chassis": "CHASSIS: (--ovn) the chassis returns and pre-empts back every router "
    "whose highest priority it holds",
    "sb-outage": "SECONDS: (--ovn) the southbound database is out: every gateway agent "
    "alive:false, gateways keep forwarding",
    "gateway-unbound": "ROUTER: (--ovn) Neutron fails to bind the router's gateway port (no "
    "binding host), as it does when it thinks the chassis' agent dead",
}


class FaultError(Exception):
    """A fault request that cannot be applied; ``status`` is the HTTP code to answer."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass(frozen=True)
class Fault:
    kind: str
    args: Mapping[str, Any]


def _convert(kind: str, name: str, kind_type: type, value: Any) -> Any:
    try:
        converted = kind_type(value)
    except (TypeError, ValueError):
        raise FaultError(f"{kind}: {name} must be a {kind_type.__name__}, not {value!r}") from None
    if isinstance(converted, float) and not math.isfinite(converted):
        raise FaultError(f"{kind}: {name} must be a finite number, not {value!r}")
    if isinstance(converted, float) and converted < 0:
        raise FaultError(f"{kind}: {name} must be 0 or more, not {value!r}")
    return converted


def parse_fault(doc: Mapping[str, Any]) -> Fault:
    """Validate ``{"fault": KIND, ...args}`` (argument types and presence)."""
    kind = doc.get("fault")
    if kind not in FAULT_ARGS:
        raise FaultError(f"unknown fault {kind!r}; known: {', '.join(FAULT_ARGS)}")
    args: dict[str, Any] = {}
    for spec, kind_type in FAULT_ARGS[kind]:
        name = spec.rstrip("?")
        if name not in doc or doc[name] is None:
            if spec.endswith("?"):
                continue
            raise FaultError(f"{kind}: missing argument {name}")
        args[name] = _convert(kind, name, kind_type, doc[name])
    extra = set(doc) - {"fault", "at"} - {s.rstrip("?") for s, _ in FAULT_ARGS[kind]}
    if extra:
        raise FaultError(f"{kind}: unknown argument(s) {', '.join(sorted(extra))}")
    if kind == "api-errors" and not 0 <= args["rate"] <= 1:
        raise FaultError("api-errors: rate must be between 0 and 1")
    if kind == "api-errors" and not 400 <= args["status"] <= 599:
        raise FaultError("api-errors: status must be an HTTP error code (400..599)")
    if args.get("agents", AGENT_KINDS[0]) not in AGENT_KINDS:
        raise FaultError(f"{kind}: agents must be one of {', '.join(AGENT_KINDS)}")
    if kind == "slow-agent" and args["factor"] <= 0:
        raise FaultError("slow-agent: factor must be greater than 0")
    return Fault(kind, args)


def fault_from_words(words: Sequence[str]) -> Fault:
    """``["mgmt-partition", "net-1", "30"]`` -> a Fault."""
    if not words:
        raise FaultError(f"name a fault: {', '.join(FAULT_ARGS)}")
    kind, values = words[0], list(words[1:])
    if kind not in FAULT_ARGS:
        raise FaultError(f"unknown fault {kind!r}; known: {', '.join(FAULT_ARGS)}")
    specs = FAULT_ARGS[kind]
    required = [s for s, _ in specs if not s.endswith("?")]
    if not len(required) <= len(values) <= len(specs):
        usage = " ".join(s.rstrip("?").upper() for s, _ in specs)
        raise FaultError(f"usage: {kind} {usage}")
    doc: dict[str, Any] = {"fault": kind}
    for (spec, _), value in zip(specs, values, strict=False):
        doc[spec.rstrip("?")] = value
    return parse_fault(doc)


@dataclass(frozen=True)
class Step:
    at: float
    fault: Fault


def parse_scenario(data: Any) -> list[Step]:
    """A list of ``{at: SECONDS, fault: KIND, ...}`` -> steps in time order."""
    if not isinstance(data, list):
        raise FaultError("a scenario is a list of {at: SECONDS, fault: KIND, ...} steps")
    steps = []
    for number, item in enumerate(data, start=1):
        if not isinstance(item, dict):
            raise FaultError(f"scenario step {number} is not a mapping")
        try:
            at = float(item.get("at", 0))
        except (TypeError, ValueError):
            raise FaultError(f"scenario step {number}: at must be a number") from None
        if not math.isfinite(at) or at < 0:
            raise FaultError(f"scenario step {number}: at must be a finite number, 0 or more")
        try:
            steps.append(Step(at, parse_fault(item)))
        except FaultError as err:
            raise FaultError(f"scenario step {number}: {err.message}") from None
    return sorted(steps, key=lambda s: s.at)


def load_scenario(path: str | Path) -> list[Step]:
    """Read a YAML or JSON scenario file. I/O: reads ``path``."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise FaultError(f"cannot read scenario {path}: {err.strerror or err}") from None
    try:
        data = json.loads(text) if str(path).endswith(".json") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise FaultError(f"scenario {path} is not valid YAML/JSON: {first}") from None
    return parse_scenario(data)
