"""The kinds the watch daemon keeps: routers, DHCP networks, OVN router gateways. I/O: cloud
reads and, through each kind's operations, writes; journal.

Each class is a ``l3ha.daemon.kind_watch.WatchedKind`` (what ``KindWatch`` asks of a
kind, with what most kinds do alike) and supplies what its kind does differently:

- ``RouterKind`` (L3 agents): the world is cached and refreshed agent by agent
  (``l3ha.daemon.world``), the data-plane probe is its second channel (a veto on a
  DEAD agent whose gateways answer; with ``--dataplane-confirms`` also an early DEAD
  for a late agent whose gateways are all dark); the router operations act
  (``run_action``) and a new leader first finishes what an earlier one left open
  (``resume``).
- ``DhcpKind`` (``--dhcp``): the whole DHCP picture is read again when a verdict
  changed, after it acted and every ``full_resync`` cycles; the DHCP operations act.
- ``GatewayKind`` (ML2/OVN): the gateway chassis and every router's group, read like
  the DHCP picture; a dead chassis is evacuated (``l3ha.operations.ovn.evacuate_or_drain``):
  taken out of every group so it cannot pre-empt back, a replacement at the lowest
  priority where a router would keep fewer than ``min_chassis`` live chassis; with
  ``--auto-rebalance`` the primaries are evened out again
  (``l3ha.operations.ovn_rebalance.rebalance``) once every chassis is settled, within
  the cycle's move budget, canary first, never onto a chassis drained in the journal.
  OVN agents report no new ``started_at`` when a chassis returns, so the kind keeps the
  restart grace itself: it rebalances only when every chassis has been judged alive for
  ``HealthPolicy.restart_grace`` of its routers (the L3 agents' grace)
  on l3ha's clock; a southbound outage (every chassis dead) restarts every chassis' grace.

Every kind plans on the world as l3ha judges it (``decide.overlay``): only its own
DEAD verdict makes an agent dead, only agents it judges alive are targets.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from l3ha.clock import Clock
from l3ha.cloud.base import Cloud
from l3ha.cloud.dhcp_base import DhcpCloud
from l3ha.daemon.dataplane import ProbeSpec, parse_probe_spec, probe_gateways
from l3ha.daemon.decide import Decision, decide, decide_dhcp, decide_gateways, overlay, targets
from l3ha.daemon.kind_watch import KindNames, Result, RunArgs, WatchedKind
from l3ha.daemon.logevents import event, host_names, named
from l3ha.daemon.settings import WatchSettings
from l3ha.daemon.world import WorldCache
from l3ha.dhcp_model import DhcpSnapshot
from l3ha.errors import L3haError
from l3ha.health import (
    HealthPolicy,
    Verdict,
    confirm_dead,
    dead_candidates,
    mark_partitioned,
)
from l3ha.journal import Journal
from l3ha.model import Agent, Snapshot
from l3ha.operations import Action, ActionRequest, OperationContext, resume, run_action
from l3ha.operations.dhcp import DhcpContext, run_dhcp_action
from l3ha.operations.ovn import GatewayAction, GatewayContext, GatewayRequest, evacuate_or_drain
from l3ha.operations.ovn_rebalance import RebalanceRequest, rebalance
from l3ha.operations.request import DhcpAction, DhcpRequest, PlacementRequest
from l3ha.ovn_model import OvnSnapshot
from l3ha.weights import WeightPolicy

if TYPE_CHECKING:
    from l3ha.cloud.ovn import NeutronOvn

Prober = Callable[[ProbeSpec, Sequence[str], float], list[str]]


class RouterKind(WatchedKind):
    """Routers on L3 agents (module docstring)."""

    def __init__(self, cloud: Cloud, journal: Journal, clock: Clock,
                 weights: Callable[[], WeightPolicy]) -> None:  # fmt: skip
        super().__init__(journal, clock)
        self.cloud = cloud
        self.cache = WorldCache(cloud, 1)
        self.weights = weights
        self.probe: ProbeSpec | None = None
        self.probe_routers = 3
        self.probe_timeout = 1.0
        self.confirms = False
        self.prober: Prober = probe_gateways

    def read_agents(self) -> list[Agent]:
        return self.cloud.list_agents()

    def refresh(self, agents: Sequence[Agent], changed: set[str]) -> Snapshot:
        return self.cache.refresh(agents, changed)

    def current(self) -> Snapshot | None:
        return self.cache.snapshot

    def count(self, world: Snapshot, agent_id: str) -> int:
        return len(world.bindings_of_agent(agent_id))

    def second_channel(
        self, world: Snapshot, judged: dict[str, Verdict], confirmable: Sequence[str]
    ) -> dict[str, Verdict]:
        """DEAD agents whose routers' gateways still answer become PARTITIONED; with
        ``--dataplane-confirms``, ``confirmable`` agents whose probed gateways all stay
        silent become DEAD (an agent with no gateway to probe keeps its verdict)."""
        if self.probe is None:
            return judged
        answering = [a for a in dead_candidates(judged) if self._answers(world, a) is True]
        dark = [a for a in confirmable if self.confirms and self._answers(world, a) is False]
        hosts = host_names(world)
        for agent_id in dark:
            event("dataplane_dark", logging.WARNING, **named("agent", agent_id, hosts))
        return mark_partitioned(confirm_dead(judged, confirmable, dark), answering)

    def _answers(self, world: Snapshot, agent_id: str) -> bool | None:
        """Whether any probed gateway of the agent's routers answered (None: none to probe)."""
        addresses = _gateway_sample(world, agent_id, self.probe_routers)
        if not addresses or self.probe is None:
            return None
        return bool(self.prober(self.probe, addresses, self.probe_timeout))

    def decide(self, world: Snapshot, verdict_of: Mapping[str, Verdict]) -> list[Decision]:
        return decide(world, verdict_of, self.auto_rebalance)

    def configure(self, settings: WatchSettings) -> None:
        super().configure(settings)
        self.cache.full_resync = self.full_resync
        probe = settings.dataplane_probe
        self.probe = parse_probe_spec(probe) if probe else None
        self.probe_routers = settings.probe_routers
        self.confirms = settings.dataplane_confirms

    def _context(self, args: RunArgs, verdict_of: Mapping[str, Verdict] | None) -> OperationContext:
        observer = None
        if verdict_of is not None:
            observer = lambda ha: self._judged_world(ha, verdict_of)  # noqa: E731
        return OperationContext(self.cloud, **self._ctx_args(args, observer))

    def run(
        self, decision: Decision, verdict_of: Mapping[str, Verdict], budget: int, args: RunArgs
    ) -> Result:
        request = ActionRequest(
            Action(decision.action),
            weights=self.weights(),
            placement=PlacementRequest(to=targets(verdict_of)),
            agent=decision.agent,
            max_moves=budget if decision.action is Action.REBALANCE else None,
            **self._request_args(decision, budget, args),
        )
        return run_action(self._context(args, verdict_of), request)

    def _judged_world(self, with_ha_state: bool, verdict_of: Mapping[str, Verdict]) -> Snapshot:
        if with_ha_state:
            snapshot = self.cloud.read_snapshot(with_ha_state=True)
        else:
            snapshot = self.cache.snapshot or self.cache.full_read()
        return overlay(snapshot, verdict_of)

    def acted(self, result: Result | None) -> None:
        if result is None:
            self.cache.force_full = True
            return
        touched: set[str] = set()
        for executed in result.executed:
            for move in executed.run.results:
                touched.update(a for a in (move.move.source, move.move.target, move.target) if a)
        self.cache.reread(touched)

    def take_over(self, args: RunArgs) -> None:
        """Read everything, finish what an earlier leader left open."""
        self.cache.force_full = True
        request = ActionRequest(Action.REPAIR, weights=self.weights(), execution=args.execution)
        try:
            result = resume(self._context(args, None), request)
        except L3haError as exc:
            event("resume_failed", logging.ERROR, error=str(exc))
            return
        if not result.recovered_ok or result.follow_up_code:
            event("resume_incomplete", logging.WARNING, exit_code=result.exit_code)


class DhcpKind(WatchedKind):
    """Networks on DHCP agents (module docstring)."""

    names = KindNames("dhcp_", "every DHCP gate has cleared", False, False)

    moved = "network"

    def __init__(self, cloud: DhcpCloud, journal: Journal, clock: Clock) -> None:
        super().__init__(journal, clock)
        self.cloud = cloud
        self.agents_per_network = 1

    def configure(self, settings: WatchSettings) -> None:
        super().configure(settings)
        self.agents_per_network = settings.dhcp_agents_per_network

    def read_agents(self) -> list[Agent]:
        return self.cloud.list_dhcp_agents()

    def read_world(self) -> DhcpSnapshot:
        return self.cloud.read_dhcp_snapshot()

    def count(self, world: DhcpSnapshot, agent_id: str) -> int:
        return len(world.networks_of_agent(agent_id))

    def decide(self, world: DhcpSnapshot, verdict_of: Mapping[str, Verdict]) -> list[Decision]:
        return decide_dhcp(world, verdict_of, self.agents_per_network)

    def run(
        self, decision: Decision, verdict_of: Mapping[str, Verdict], budget: int, args: RunArgs
    ) -> Result:
        request = DhcpRequest(
            DhcpAction(decision.action),
            agent=decision.agent,
            to=targets(verdict_of),
            agents_per_network=self.agents_per_network,
            **self._request_args(decision, budget, args),
        )
        ctx = DhcpContext(self.cloud, **self._ctx_args(args, self._judged(verdict_of)))
        return run_dhcp_action(ctx, request)


class GatewayKind(WatchedKind):
    """Router gateways on OVN gateway chassis (module docstring)."""

    def __init__(self, ovn: NeutronOvn, journal: Journal, clock: Clock, min_chassis: int,
                 weights: Callable[[], WeightPolicy] = WeightPolicy) -> None:  # fmt: skip
        super().__init__(journal, clock)
        self.ovn = ovn
        self.min_chassis = min_chassis
        self.weights = weights
        self.grace = HealthPolicy()
        self._alive_since: dict[str, float] = {}

    def second_channel(
        self, world: OvnSnapshot, judged: dict[str, Verdict], confirmable: Sequence[str]
    ) -> dict[str, Verdict]:
        """No second channel; notes since when each chassis has been judged alive."""
        now = self.clock.monotonic()
        self._alive_since = {
            c: self._alive_since.get(c, now) for c, v in judged.items() if v is Verdict.ALIVE
        }
        return judged

    def settled(self, world: OvnSnapshot) -> bool:
        """Every chassis judged alive for its restart grace (module docstring)."""
        now, policy = self.clock.monotonic(), self.grace
        for chassis in world.chassis:
            since = self._alive_since.get(chassis.id)
            grace = policy.restart_grace(len(world.routers_of(chassis.id)))
            if since is None or now - since < grace:
                return False
        return True

    def read_agents(self) -> list[Agent]:
        return self.ovn.list_chassis()

    def read_world(self) -> OvnSnapshot:
        return self.ovn.read_ovn_snapshot()

    def refresh(self, agents: Sequence[Agent], changed: set[str]) -> OvnSnapshot:
        world: OvnSnapshot = super().refresh(agents, changed)
        return replace(world, chassis=tuple(agents))  # the fresh heartbeats

    def count(self, world: OvnSnapshot, agent_id: str) -> int:
        return len(world.routers_of(agent_id))

    def decide(self, world: OvnSnapshot, verdict_of: Mapping[str, Verdict]) -> list[Decision]:
        settled = self.auto_rebalance and self.settled(world)
        return decide_gateways(world, verdict_of, self.auto_rebalance, settled)

    def run(
        self, decision: Decision, verdict_of: Mapping[str, Verdict], budget: int, args: RunArgs
    ) -> Result:
        ctx = GatewayContext(self.ovn, **self._ctx_args(args, self._judged(verdict_of)))
        common = self._request_args(decision, budget, args)
        if decision.action is Action.REBALANCE:  # at most ``budget`` moves, the first a canary
            auto = RebalanceRequest(weights=self.weights(), max_moves=budget, canary=1, **common)
            return rebalance(ctx, auto)
        request = GatewayRequest(
            GatewayAction(decision.action.value),
            str(decision.agent),
            min_chassis=self.min_chassis,
            **common,
        )
        return evacuate_or_drain(ctx, request)


def _gateway_sample(snapshot: Snapshot, agent_id: str, count: int) -> list[str]:
    """Gateway addresses of up to ``count`` of the agent's legacy routers (first address
    each). HA and DVR routers are left out: their gateway may answer from another node."""
    addresses: list[str] = []
    for binding in sorted(snapshot.bindings_of_agent(agent_id), key=lambda b: b.router_id):
        router = snapshot.routers_by_id.get(binding.router_id)
        if router is not None and router.gateway_ips and not (router.ha or router.distributed):
            addresses.append(router.gateway_ips[0])
        if len(addresses) >= count:
            break
    return addresses
