"""What the simulation's helpers may use of it: the narrow interface of ``sim.Simulation``. Pure.

The helpers (``sim_agents``, ``sim_vrrp``, ``sim_schedule``, ``sim_failover``, ``sim_dhcp``,
``sim_dhcp_failover``) take a ``SimCore`` instead of the whole ``Simulation``: the world, the
settings, the clock and event heap, and the few router-processing steps every helper shares.
A helper that needs another helper gets that one passed in, so each helper's imports say
everything it can reach and none of them imports ``sim``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from l3ha.emulator.config import EmulatorConfig
from l3ha.emulator.records import AgentRec, Replica, RouterRec
from l3ha.emulator.world import World

if TYPE_CHECKING:  # the protocol only: time comes from the clock a caller injects
    from l3ha.clock import Clock


class Core(Protocol):
    """What the simulation's helpers and the API's handler groups share: the world, the
    settings and the clock (callers hold ``world.lock``)."""

    @property
    def world(self) -> World: ...

    @property
    def cfg(self) -> EmulatorConfig: ...

    @property
    def clock(self) -> Clock: ...


class SimCore(Core, Protocol):
    """The simulation as its helpers see it (callers hold ``world.lock``)."""

    def schedule(self, at: float, func: Callable[..., None], *args: Any) -> None:
        """Run ``func(*args)`` at monotonic time ``at``."""

    def can_report(self, agent: AgentRec) -> bool:
        """The agent's process runs and reaches the message bus (both ways)."""

    def is_alive(self, agent: AgentRec, now: datetime | None = None) -> bool:
        """Neutron's view: heartbeat not older than ``agent_down_time``."""

    def vrrp_alive(self, agent: AgentRec) -> bool:
        """The agent's keepalived can take part in an election."""

    def bind(self, router: RouterRec, agent: AgentRec, notify: bool = True) -> None:
        """Bind and tell the agent (lost while it is cut off)."""

    def unbind(self, router: RouterRec, agent: AgentRec) -> bool:
        """Unbind and tell the agent; a cut-off agent keeps running its copy."""

    def pump(self, agent: AgentRec) -> None:
        """Start processing queued routers up to the agent's concurrency."""

    def refresh(self, router: RouterRec) -> None:
        """Re-derive VRRP, reported HA state, port host and forwarding of one router."""

    def refresh_agent(self, agent: AgentRec) -> None:
        """``refresh`` every router the agent hosts."""

    def copies(self, router: RouterRec) -> list[Replica]:
        """Every copy of the router an agent runs or is setting up: bindings, then stale."""
