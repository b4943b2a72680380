"""Plans for DHCP networks: evacuate or drain a DHCP agent, repair copy counts. Pure.

Every network wants exactly ``agents_per_network`` copies on live, enabled
DHCP agents (Neutron's ``dhcp_agents_per_network``, default 1). A plan is a
list of ``DhcpMove``s the executor runs make before break:

- ``evacuate``/``drain`` an agent: each of its networks is moved to another
  agent (added there, the copy on the source removed once the new port is
  ACTIVE), or only removed from the source when enough other live copies
  already serve it. Networks with no other live copy go first. A network
  without a DHCP-enabled subnet (Neutron schedules the external and HA
  networks too) is only removed: no agent ever gets a DHCP port for it.
- ``return`` networks to an agent back from maintenance: each leaves its
  busiest host for the agent (make before break).
- ``repair``: a network below its count gets copies, first by replacing
  copies on dead or disabled agents (a move), then by adding; copies above
  the count, and copies on dead or disabled agents of networks that are
  served well enough, are removed only with ``trim``.

Placement counts what the same plan placed before: the target is the agent
with the fewest networks, then the fewest DHCP ports, in an availability zone
the network's hints ask for and, where possible, one its other copies are not
in; ties are broken by host and id, so the same input always gives the same
plan, and planning again on the result (``apply_dhcp_plan``) gives nothing.
There is deliberately no "every network on every agent" plan.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from l3ha.dhcp_model import (
    DEFAULT_AGENTS_PER_NETWORK,
    DhcpBinding,
    DhcpMove,
    DhcpMoveKind,
    DhcpPlan,
    DhcpSnapshot,
    DhcpUnplaceable,
    Network,
    usable,
)
from l3ha.errors import BadInputError
from l3ha.model import Agent, down_word

EVACUATE = "dhcp-evacuate"
DRAIN = "dhcp-drain"
REPAIR = "dhcp-repair"
RETURN = "dhcp-return"


@dataclass(frozen=True)
class DhcpPolicy:
    """How networks are placed: the copy count, allowed targets (``--to``), ``--trim``."""

    agents_per_network: int = DEFAULT_AGENTS_PER_NETWORK
    allowed_targets: frozenset[str] | None = None
    trim: bool = False

    def __post_init__(self) -> None:
        if self.agents_per_network < 1:
            raise BadInputError(
                f"--agents-per-network must be at least 1, not {self.agents_per_network}"
            )


class _World:
    """The snapshot as the plan changes it: hosts per network, load per agent."""

    def __init__(self, snapshot: DhcpSnapshot, policy: DhcpPolicy) -> None:
        self.snapshot = snapshot
        self.policy = policy
        self.hosts = {n.id: set(snapshot.agents_of_network(n.id)) for n in snapshot.networks}
        self.networks = {a.id: len(snapshot.networks_of_agent(a.id)) for a in snapshot.agents}
        self.ports = {a.id: snapshot.ports_on_host(a.host) for a in snapshot.agents}

    def agent(self, agent_id: str) -> Agent | None:
        return self.snapshot.agents_by_id.get(agent_id)

    def serving(self, network_id: str, without: str | None = None) -> list[str]:
        hosts = self.hosts.get(network_id, set())
        return sorted(a for a in hosts if a != without and usable(self.agent(a)))

    def best_target(self, network: Network, exclude: str | None) -> Agent | None:
        """The least loaded eligible agent for one more copy of ``network``."""
        hosts = self.hosts.get(network.id, set())
        zones = {a.availability_zone for h in hosts if h != exclude and (a := self.agent(h))}
        allowed = self.policy.allowed_targets
        eligible = [
            a
            for a in self.snapshot.agents
            if usable(a)
            and a.id not in hosts
            and a.id != exclude
            and (allowed is None or a.id in allowed)
        ]
        if not eligible:
            return None

        def key(a: Agent) -> tuple[int, int, int, int, str, str]:
            off_hint = bool(network.availability_zone_hints) and (
                a.availability_zone not in network.availability_zone_hints
            )
            return (
                int(off_hint),
                int(a.availability_zone in zones),
                self.networks[a.id],
                self.ports[a.id],
                a.host,
                a.id,
            )

        return min(eligible, key=key)

    def add(self, network_id: str, agent_id: str) -> None:
        self.hosts.setdefault(network_id, set()).add(agent_id)
        self.networks[agent_id] += 1
        self.ports[agent_id] += 1

    def remove(self, network_id: str, agent_id: str) -> None:
        self.hosts.get(network_id, set()).discard(agent_id)
        self.networks[agent_id] -= 1
        self.ports[agent_id] = max(0, self.ports[agent_id] - 1)

    def load_key(self, agent_id: str) -> tuple[int, int, str]:
        return (self.networks.get(agent_id, 0), self.ports.get(agent_id, 0), agent_id)


#: Why a network without a DHCP-enabled subnet is only removed from the agent.
NOTHING_SERVED = "no DHCP-enabled subnet: nothing to serve, only removed"


def plan_dhcp_evacuate(
    snapshot: DhcpSnapshot, source_id: str, policy: DhcpPolicy, action: str = EVACUATE
) -> DhcpPlan:
    """Every network off ``source_id`` (see the module docstring); ``action`` names the plan."""
    world = _World(snapshot, policy)
    on_source = [
        snapshot.networks_by_id[n]
        for n in snapshot.networks_of_agent(source_id)
        if n in snapshot.networks_by_id
    ]
    # networks that nothing else serves first: they are without DHCP (or will be) soonest
    on_source.sort(key=lambda n: (len(world.serving(n.id, without=source_id)) > 0, n.id))
    source = snapshot.agents_by_id.get(source_id)
    down = not usable(source)
    reason = f"{action.removeprefix('dhcp-')} {source.host if source else source_id}"
    moves: list[DhcpMove] = []
    unplaceable: list[DhcpUnplaceable] = []
    for network in on_source:
        if not network.needs_dhcp:
            moves.append(_removal(network.id, source_id, NOTHING_SERVED, down=down, serves=False))
            world.remove(network.id, source_id)
            continue
        others = world.serving(network.id, without=source_id)
        if len(others) >= policy.agents_per_network:
            moves.append(
                _removal(
                    network.id,
                    source_id,
                    f"already served by {len(others)} other live agent(s)",
                    down=down,
                )
            )
            world.remove(network.id, source_id)
            continue
        target = world.best_target(network, exclude=source_id)
        if target is None:
            unplaceable.append(DhcpUnplaceable(network.id, _no_target(policy)))
            continue
        moves.append(DhcpMove(network.id, DhcpMoveKind.MOVE, target.id, source_id, reason, down))
        world.add(network.id, target.id)
        world.remove(network.id, source_id)
    return DhcpPlan(action, tuple(moves), tuple(unplaceable))


def plan_dhcp_drain(snapshot: DhcpSnapshot, source_id: str, policy: DhcpPolicy) -> DhcpPlan:
    """Every network off a live agent, make before break (the agent is disabled afterwards)."""
    return plan_dhcp_evacuate(snapshot, source_id, policy, action=DRAIN)


def plan_dhcp_return(snapshot: DhcpSnapshot, network_ids: list[str], target_id: str) -> DhcpPlan:
    """Networks back onto ``target_id`` (a host restored after maintenance), each moved off
    its busiest hosting agent, make before break. Networks gone, already on the target,
    or with no other host are left alone; an unusable target gets nothing."""
    target = snapshot.agents_by_id.get(target_id)
    if not usable(target):
        return DhcpPlan(RETURN)
    world = _World(snapshot, DhcpPolicy())
    reason = f"return to {target.host if target else target_id}"
    moves: list[DhcpMove] = []
    for network_id in dict.fromkeys(network_ids):
        hosts = world.hosts.get(network_id, set())
        if network_id not in snapshot.networks_by_id or target_id in hosts or not hosts:
            continue
        source = max(hosts, key=world.load_key)
        moves.append(DhcpMove(network_id, DhcpMoveKind.MOVE, target_id, source, reason))
        world.add(network_id, target_id)
        world.remove(network_id, source)
    return DhcpPlan(RETURN, tuple(moves))


def plan_dhcp_repair(snapshot: DhcpSnapshot, policy: DhcpPolicy) -> DhcpPlan:
    """Every network to exactly ``agents_per_network`` live copies (see the module docstring)."""
    world = _World(snapshot, policy)
    moves: list[DhcpMove] = []
    unplaceable: list[DhcpUnplaceable] = []
    for network in sorted(snapshot.networks, key=lambda n: n.id):
        if not network.needs_dhcp:
            continue
        placed, missing = _fill(world, network)
        moves += placed
        if missing:
            unplaceable.append(
                DhcpUnplaceable(network.id, f"{missing} copy(ies) short: {_no_target(policy)}")
            )
        if policy.trim:
            moves += _trim(world, network)
    return DhcpPlan(REPAIR, tuple(moves), tuple(unplaceable))


def _fill(world: _World, network: Network) -> tuple[list[DhcpMove], int]:
    """Moves that bring ``network`` up to its count; and how many copies stay missing."""
    want = world.policy.agents_per_network
    need = want - len(world.serving(network.id))
    unusable = sorted(a for a in world.hosts.get(network.id, set()) if not usable(world.agent(a)))
    moves: list[DhcpMove] = []
    while need > 0:
        source = unusable.pop(0) if unusable else None
        target = world.best_target(network, exclude=source)
        if target is None:
            break
        if source is None:
            reason = f"below {want} live copy(ies)"
            moves.append(DhcpMove(network.id, DhcpMoveKind.ADD, target.id, None, reason))
        else:
            agent = world.agent(source)
            where = agent.host if agent else source
            reason = f"replace the copy on {down_word(agent)} agent {where}"
            moves.append(DhcpMove(network.id, DhcpMoveKind.MOVE, target.id, source, reason, True))
            world.remove(network.id, source)
        world.add(network.id, target.id)
        need -= 1
    return moves, max(need, 0)


def _trim(world: _World, network: Network) -> list[DhcpMove]:
    """With ``--trim``: remove live copies above the count, busiest agents first, then
    copies on dead or disabled agents of a network that is served."""
    want = world.policy.agents_per_network
    serving = world.serving(network.id)
    moves: list[DhcpMove] = []
    extra = sorted(serving, key=world.load_key, reverse=True)[: max(0, len(serving) - want)]
    for agent_id in extra:
        moves.append(_removal(network.id, agent_id, f"above {want} live copy(ies) (--trim)"))
        world.remove(network.id, agent_id)
    if not world.serving(network.id):
        return moves
    for agent_id in sorted(world.hosts.get(network.id, set())):
        if not usable(world.agent(agent_id)):
            state = down_word(world.agent(agent_id))
            moves.append(
                _removal(network.id, agent_id, f"copy on {state} agent (--trim)", down=True)
            )
            world.remove(network.id, agent_id)
    return moves


def _removal(
    network_id: str, agent_id: str, reason: str, *, down: bool = False, serves: bool = True
) -> DhcpMove:
    return DhcpMove(network_id, DhcpMoveKind.REMOVE, None, agent_id, reason, down, serves)


def _no_target(policy: DhcpPolicy) -> str:
    if policy.allowed_targets is not None:
        return "no live, enabled DHCP agent among --to can take it"
    return "no live, enabled DHCP agent can take it"


def apply_dhcp_plan(snapshot: DhcpSnapshot, plan: DhcpPlan) -> DhcpSnapshot:
    """The snapshot as it would be after every move of ``plan`` succeeded."""
    bindings = {(b.network_id, b.agent_id) for b in snapshot.bindings}
    for move in plan.moves:
        if move.target is not None:
            bindings.add((move.network_id, move.target))
        if move.source is not None and move.kind is not DhcpMoveKind.ADD:
            bindings.discard((move.network_id, move.source))
    ordered = tuple(DhcpBinding(n, a) for n, a in sorted(bindings))
    return replace(snapshot, bindings=ordered)
