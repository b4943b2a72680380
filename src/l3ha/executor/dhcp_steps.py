"""The writes of one DHCP move, and DHCP recovery. I/O: cloud, journal.

Each write is preceded by a fresh read of the network's DHCP agents (the
re-check) and by a journalled intent (fsynced), and the adapter reads every
write back. The rule that matters most is enforced here, at the last moment:
a copy is removed only while another live, enabled agent hosts the network
with an ACTIVE DHCP port, so l3ha never leaves a network without DHCP.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from l3ha.cloud.dhcp_base import DhcpCloud
from l3ha.dhcp_model import DhcpMove, DhcpMoveKind, DhcpPort
from l3ha.errors import NotFoundError
from l3ha.executor.lifecycle import JournalGuard
from l3ha.journal import Journal, MoveRecord, MoveStep, OperationStatus
from l3ha.model import Agent, Move, MoveKind

log = logging.getLogger(__name__)

_JOURNAL_KIND = {
    DhcpMoveKind.MOVE: MoveKind.MOVE,
    DhcpMoveKind.ADD: MoveKind.ADD_REPLICA,
    DhcpMoveKind.REMOVE: MoveKind.REMOVE_REPLICA,
}


def is_dhcp_operation(kind: str) -> bool:
    """Whether a journal operation kind is one of the DHCP actions (router recovery skips
    them): every DHCP kind starts with "dhcp-"."""
    return kind.startswith("dhcp-")


def journal_move(move: DhcpMove) -> Move:
    """The journal's record of a DHCP move (journalled as an ``ObjectKind.NETWORK`` move, its
    ``router_id`` the network's id)."""
    return Move(move.network_id, _JOURNAL_KIND[move.kind], move.target, move.source, move.reason)


def serving_port(ports: list[DhcpPort], network_id: str, host: str) -> DhcpPort | None:
    """The network's ACTIVE DHCP port on ``host`` that an agent owns (not a reserved one)."""
    for port in ports:
        if (
            port.network_id == network_id
            and port.host == host
            and port.active
            and not port.reserved
        ):
            return port
    return None


@dataclass(frozen=True)
class DhcpReadiness:
    """The DHCP kind's ``Readiness`` (``l3ha.executor.ports``): a network is ready on a host
    once an agent-owned DHCP port of it there is ACTIVE (``serving_port``)."""

    cloud: DhcpCloud

    def read(self, object_ids: list[str]) -> dict[str, list[DhcpPort]]:
        by_network: dict[str, list[DhcpPort]] = {n: [] for n in object_ids}
        for port in self.cloud.dhcp_ports_of_networks(sorted(set(object_ids))):
            by_network.setdefault(port.network_id, []).append(port)
        return by_network

    def ready(
        self, ports: Sequence[DhcpPort], kind: object, host: str
    ) -> tuple[bool, tuple[str, ...]]:
        network_id = ports[0].network_id if ports else ""
        if serving_port(list(ports), network_id, host) is not None:
            return True, ()
        return False, tuple(p.id for p in ports if p.host == host)


class SkipMoveError(Exception):
    """The re-check found the move not needed or not allowed any more (the reason)."""


@dataclass(frozen=True)
class DhcpWriter:
    """Re-checks and writes for one move at a time; thread-safe (no state of its own)."""

    cloud: DhcpCloud
    guard: JournalGuard  # the run's journal: a failed write is remembered
    usable: Callable[[Agent | None], bool]  # ``ExecutorOptions.usable``: the run's verdicts

    def hosts(self, network_id: str) -> dict[str, Agent]:
        """The network's DHCP agents now, by id (``SkipMoveError`` when it was deleted)."""
        try:
            return {a.id: a for a in self.cloud.dhcp_agents_of_network(network_id)}
        except NotFoundError as exc:
            raise SkipMoveError("the network no longer exists") from exc

    def recheck(self, move: DhcpMove, require_dead_source: bool) -> dict[str, Agent]:
        """Fresh hosts of the network; ``SkipMoveError`` when the move is no longer wanted."""
        hosts = self.hosts(move.network_id)
        if move.source is not None and move.source not in hosts:
            raise SkipMoveError("no longer on the source")
        source = hosts.get(move.source or "")
        if require_dead_source and move.source_down and self.usable(source):
            raise SkipMoveError("the source agent is alive and enabled again")
        return hosts

    def add(self, move: DhcpMove, move_id: int, target: str, hosts: dict[str, Agent]) -> None:
        """Journal the intent, add the network to ``target`` (read back), record it."""
        self.guard.step(move_id, MoveStep.INTENT, target=target, detail=move.reason)
        if target not in hosts:
            self.cloud.add_network_to_agent(move.network_id, target)
        self.guard.step(move_id, MoveStep.BOUND, target=target)

    def remove(
        self, move: DhcpMove, move_id: int, keep: str | None, *, keep_port_seen: bool = False
    ) -> str:
        """Remove the copy on the move's source once another live agent serves the network.

        ``keep``: the agent that must be among the servers (a move's target);
        ``keep_port_seen``: its ACTIVE port was read from the cloud a moment ago
        (by the port poller), so the ports are not read again. Raises
        ``SkipMoveError`` (nothing written) when no other agent serves it now.
        Returns the host(s) that serve it. A network with no DHCP-enabled subnet
        (``serves_dhcp`` false) is removed without asking: nothing is served ("").
        """
        source = move.source or ""
        hosts = self.hosts(move.network_id)
        if source not in hosts:
            return ", ".join(sorted(a.host for a in hosts.values()))
        if not move.serves_dhcp:
            self.guard.step(move_id, MoveStep.INTENT, detail=f"remove from {source}")
            self.cloud.remove_network_from_agent(move.network_id, source)
            self.guard.step(move_id, MoveStep.UNBOUND)
            return ""
        servers = [a for a in hosts.values() if a.id != source and self.usable(a)]
        if keep is not None and keep not in {a.id for a in servers}:
            raise SkipMoveError("the new agent is not alive and enabled any more: source kept")
        if keep is not None and keep_port_seen:
            serving = [a for a in servers if a.id == keep]
        else:
            ports = self.cloud.dhcp_ports(move.network_id)
            serving = [a for a in servers if serving_port(ports, move.network_id, a.host)]
        if not serving:
            raise SkipMoveError("no other live agent serves the network with an ACTIVE port: kept")
        self.guard.step(move_id, MoveStep.VERIFIED, detail="served elsewhere")
        self.guard.step(move_id, MoveStep.INTENT, detail=f"remove from {source}")
        self.cloud.remove_network_from_agent(move.network_id, source)
        self.guard.step(move_id, MoveStep.UNBOUND)
        return ", ".join(sorted(a.host for a in serving))


class DhcpRecoveryAction(StrEnum):
    """What recovery found for one interrupted DHCP move (it never writes)."""

    DONE = "already_done"  # the move had completed
    LEFT = "left_as_found"  # not completed: the network keeps the copies it has
    GONE = "gone"  # the network was deleted


@dataclass(frozen=True, slots=True)
class DhcpRecovery:
    """One interrupted DHCP move and what recovery judged."""

    operation_id: int
    network_id: str
    action: DhcpRecoveryAction
    detail: str


def recover_dhcp(cloud: DhcpCloud, journal: Journal, *, dry_run: bool) -> list[DhcpRecovery]:
    """Close the open moves of interrupted DHCP operations from the cloud's state.

    Make before break means an interruption can at worst leave one copy too
    many (added, source not yet removed): nothing is written here; ``dhcp
    repair --trim`` removes such copies.
    """
    results: list[DhcpRecovery] = []
    for op in journal.unfinished_operations():
        if not is_dhcp_operation(op.kind):
            continue
        for record in (m for m in journal.moves(op.id) if not m.finished):
            try:
                hosts = {a.id for a in cloud.dhcp_agents_of_network(record.object_id)}
            except NotFoundError:
                result = DhcpRecovery(op.id, record.object_id, DhcpRecoveryAction.GONE, "deleted")
            else:
                result = _judge(op.id, record, hosts)
            results.append(result)
            if not dry_run:
                outcome = "moved" if result.action is DhcpRecoveryAction.DONE else "skipped"
                journal.record_outcome(record.id, outcome, f"recovered: {result.detail}")
        if not dry_run:
            journal.finish_operation(op.id, OperationStatus.RECOVERED, "recovered DHCP moves")
    return results


def _judge(op_id: int, record: MoveRecord, hosts: set[str]) -> DhcpRecovery:
    network_id, source, target = record.object_id, record.source, record.target
    done = (target is None or target in hosts) and (
        record.kind == MoveKind.ADD_REPLICA.value or source is None or source not in hosts
    )
    where = ", ".join(sorted(hosts)) or "no agent"
    if done:
        return DhcpRecovery(op_id, network_id, DhcpRecoveryAction.DONE, f"on {where}")
    return DhcpRecovery(op_id, network_id, DhcpRecoveryAction.LEFT, f"left on {where}")
