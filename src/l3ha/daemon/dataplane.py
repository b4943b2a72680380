"""The data-plane second channel: do routers' gateway addresses still answer? I/O: network.

Before an agent is judged dead, the daemon probes the external gateway
addresses of a few of its routers (``--dataplane-probe tcp:PORT|icmp``). Any
answer means the agent's node still forwards: the agent is partitioned from
the control plane, not dead, and nothing moves (``health.mark_partitioned``).

What counts as an answer:

- ``icmp``: an echo reply from the address (raw socket as root, else an
  unprivileged ICMP socket where the sysctl allows it). ICMP errors such as
  *destination unreachable* come from somewhere else and are not an answer.
- ``tcp:PORT``: a completed handshake. A *refused* connection is **not** an
  answer: ECONNREFUSED is what the socket reports both for a RST from the
  gateway itself and for an ICMP port-unreachable sent by any firewall or
  router on the path (iptables ``REJECT``'s default), so it cannot prove the
  gateway's node is alive. Pick a port that the gateway address really
  accepts (a service behind the SNAT address, a port forwarding), or use
  ``icmp``. The emulator models a router that stopped forwarding exactly
  so: its loopback listener closes, and connects are refused.
- anything else (timeout, unreachable, reset) is no answer.

Probes run concurrently (at most ``concurrency`` at once), each bounded by
``timeout``, all of them by an overall ``deadline``; what has not answered by
then has not answered. The attempts are the probe's own samplers
(``l3ha.probe.samplers``), driven by a private event loop, so this works from
any thread, including one that runs an event loop itself. Addresses must be
IP addresses: nothing is ever resolved.
"""

from __future__ import annotations

import asyncio
import ipaddress
import math
import re
import socket
from collections.abc import Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from l3ha.errors import BadInputError
from l3ha.probe.samplers import Attempt, IcmpEngine, SampleError, tcp_attempt
from l3ha.probe.targets import Target, TargetKind

DEFAULT_CONCURRENCY = 32
_TCP_SPEC = re.compile(r"tcp:(\d{1,5})")
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class ProbeSpec:
    """A parsed ``--dataplane-probe`` value; ``port`` is set for TCP only."""

    kind: TargetKind  # TCP or ICMP
    port: int = 0

    def __str__(self) -> str:
        return f"tcp:{self.port}" if self.kind is TargetKind.TCP else "icmp"


def parse_probe_spec(text: str) -> ProbeSpec:
    """``tcp:PORT`` (1-65535) or ``icmp``; anything else is a one-line BadInputError."""
    spec = text.strip().lower()
    if spec == "icmp":
        return ProbeSpec(TargetKind.ICMP)
    match = _TCP_SPEC.fullmatch(spec)
    if match is None:
        raise BadInputError(f"data-plane probe {text!r} is not 'tcp:PORT' or 'icmp'")
    port = int(match.group(1))
    if not 0 < port < 65536:
        raise BadInputError(f"data-plane probe {text!r}: port {port} is out of range 1-65535")
    return ProbeSpec(TargetKind.TCP, port)


def ensure_probe_possible(spec: ProbeSpec) -> None:
    """Fail at start-up, with BadInputError, when this process cannot send the probe."""
    if spec.kind is TargetKind.ICMP:
        _run(_open_icmp_sockets())


async def _open_icmp_sockets() -> None:
    engine = IcmpEngine()
    try:
        engine.open(socket.AF_INET)
    finally:
        engine.close()


def probe_gateways(
    spec: ProbeSpec,
    addresses: Sequence[str],
    timeout: float = 1.0,
    *,
    deadline: float | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> list[str]:
    """The addresses that answered, in the order given (each address is probed once).

    Each probe waits at most ``timeout`` seconds; the whole call returns within
    about ``deadline`` seconds (default: twice ``timeout``). Raises
    BadInputError for an address that is not an IP address, bad bounds, or an
    ICMP probe this process may not send.
    """
    unique = _checked_addresses(addresses)
    limit = 2 * timeout if deadline is None else deadline
    _check_bounds(timeout, limit, concurrency)
    if not unique:
        return []
    answered = _run(_probe_all(spec, unique, timeout, limit, concurrency))
    return [a for a in unique if a in answered]


def _checked_addresses(addresses: Sequence[str]) -> list[str]:
    if isinstance(addresses, str):
        raise BadInputError("gateway addresses must be a sequence of IP addresses, not one string")
    unique: list[str] = []
    for address in addresses:
        try:
            ipaddress.ip_address(address)
        except ValueError:
            raise BadInputError(f"gateway address {address!r} is not an IP address") from None
        if address not in unique:
            unique.append(address)
    return unique


def _check_bounds(timeout: float, deadline: float, concurrency: int) -> None:
    for name, value in (("timeout", timeout), ("deadline", deadline)):
        if not (math.isfinite(value) and value > 0):
            raise BadInputError(f"data-plane probe {name} must be > 0 seconds, not {value!r}")
    if concurrency < 1:
        raise BadInputError(f"data-plane probe concurrency must be >= 1, not {concurrency!r}")


def _run(coroutine: Coroutine[object, object, _T]) -> _T:
    """Run on a private event loop; in a thread of our own if this one already runs a loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="l3ha-dataplane") as pool:
        return pool.submit(asyncio.run, coroutine).result()


async def _probe_all(
    spec: ProbeSpec, addresses: list[str], timeout: float, deadline: float, concurrency: int
) -> set[str]:
    icmp = IcmpEngine() if spec.kind is TargetKind.ICMP else None
    try:
        attempts = {a: _attempt(spec, a, icmp) for a in addresses}
        slots = asyncio.Semaphore(concurrency)
        tasks = [asyncio.create_task(_answers(a, attempts[a], slots, timeout)) for a in addresses]
        done, pending = await asyncio.wait(tasks, timeout=deadline)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        return {address for task in done if (address := task.result()) is not None}
    finally:
        if icmp is not None:
            icmp.close()


def _attempt(spec: ProbeSpec, address: str, icmp: IcmpEngine | None) -> Attempt:
    target = Target(spec.kind, address, address, spec.port)
    return icmp.attempt(target) if icmp is not None else tcp_attempt(target)


async def _answers(
    address: str, attempt: Attempt, slots: asyncio.Semaphore, timeout: float
) -> str | None:
    """``address`` when it answered within ``timeout`` of its turn, else None."""
    async with slots:
        try:
            await asyncio.wait_for(attempt(), timeout)
        except (SampleError, TimeoutError):
            return None
    return address
