"""The writes of one gateway move and what it waits for. I/O: cloud (Neutron), journal, and
through what a caller gives, the data plane and OVN's northbound database.

Each move re-reads the router's chassis group and the chassis' liveness first (the
re-check), journals its intent (fsynced), then writes through ``cloud.ovn``, which reads
every write back. A source chassis alive again is not removed (it would fail the router
over: that is a drain's job, not an evacuation's). ``recover_gateways`` closes the
moves of an interrupted gateway operation from the groups as they are (it never writes to
Neutron: the next evacuation plans anew from what it finds). ``GatewayReadiness`` waits
until the router's group holds the target and, for a router whose traffic the target took
over, with the northbound database (``l3ha drain --ovn-nb``) until OVN says the target
hosts it, with a probe (``--probe``) until it answers on its gateway addresses again.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from l3ha.errors import L3haError
from l3ha.executor.dhcp_steps import SkipMoveError
from l3ha.executor.lifecycle import JournalGuard
from l3ha.journal import Journal, MoveRecord, MoveStep, OperationStatus
from l3ha.model import Agent, Move, MoveKind
from l3ha.ovn_model import GatewayBinding
from l3ha.planner.gateway import GatewayMove, GatewayMoveKind, bottom_priority

if TYPE_CHECKING:
    from l3ha.cloud.ovn import NeutronOvn

#: Journal operation kinds of the gateway actions all start with this.
GATEWAY_KIND_PREFIX = "ovn-"
#: Probes gateway addresses once each; the ones that answered (``--probe``).
GatewayProbe = Callable[[Sequence[str]], Collection[str]]
#: Reads where OVN hosts each router's gateway now: router id -> chassis id (``--ovn-nb``).
GatewayHosting = Callable[[], Mapping[str, str]]
#: The moves after which the target forwards the router's traffic (it is raised to the top).
TAKES_OVER = frozenset({GatewayMoveKind.PROMOTE, GatewayMoveKind.RAISE})


def is_gateway_operation(kind: str) -> bool:
    """Whether a journal operation kind is an OVN gateway action (router recovery skips it)."""
    return kind.startswith(GATEWAY_KIND_PREFIX)


def journal_move(move: GatewayMove) -> Move:
    """The journal's record of a gateway move (an ``ObjectKind.GATEWAY`` move: its
    ``router_id`` the router, source and target chassis ids)."""
    kind = {
        GatewayMoveKind.REPLACE: MoveKind.MOVE,
        GatewayMoveKind.REMOVE: MoveKind.REMOVE_REPLICA,
        GatewayMoveKind.ADD: MoveKind.ADD_REPLICA,
        GatewayMoveKind.PROMOTE: MoveKind.MOVE,
        GatewayMoveKind.DEMOTE: MoveKind.REMOVE_REPLICA,
        GatewayMoveKind.RAISE: MoveKind.MOVE,
    }[move.kind]
    return Move(move.router_id, kind, move.target, move.source, move.reason)


@dataclass(frozen=True, slots=True)
class Answer:
    """One gateway address of a router, probed once: did it answer?"""

    address: str
    answered: bool


@dataclass(frozen=True, slots=True)
class Hosted:
    """The chassis OVN's northbound database says hosts a router's gateway ("" none)."""

    chassis_id: str


Reading = GatewayBinding | Answer | Hosted


@dataclass(frozen=True, eq=False)
class GatewayReadiness:
    """The gateway kind's ``Readiness``: a router is ready on a chassis' host once its
    group, read back, holds that chassis and, after a move that makes the chassis forward
    its traffic, with ``hosting`` once OVN's northbound database says that chassis hosts it,
    with a ``probe`` once every gateway address of the router answers. ``hosts``: chassis
    id -> host; ``addresses``: router id -> its gateway addresses. What a router still
    waits for is said in words (the move's reason when time runs out)."""

    ovn: NeutronOvn
    hosts: Mapping[str, str]
    probe: GatewayProbe | None = None
    addresses: Mapping[str, Sequence[str]] = field(default_factory=dict)
    hosting: GatewayHosting | None = None

    def read(self, object_ids: list[str]) -> dict[str, list[Reading]]:
        routers = sorted(set(object_ids))
        found: dict[str, list[Reading]] = {
            r: [*group] for r, group in self.ovn.groups(routers).items()
        }
        if self.hosting is not None:
            hosted = self.hosting()
            for router in routers:
                found[router].append(Hosted(hosted.get(router, "")))
        if self.probe is not None:
            addresses = [a for r in routers for a in self.addresses.get(r, ())]
            answered = set(self.probe(addresses)) if addresses else set()
            for router in routers:
                found[router] += [Answer(a, a in answered) for a in self.addresses.get(router, ())]
        return found

    def ready(
        self, found: Sequence[Reading], kind: object, host: str
    ) -> tuple[bool, tuple[str, ...]]:
        if not any(
            isinstance(b, GatewayBinding) and self.hosts.get(b.chassis_id) == host for b in found
        ):
            return False, (f"{host} not seen in the router's group again",)
        if kind not in TAKES_OVER:
            return True, ()
        waiting = tuple(
            f"still hosted on {self.hosts.get(h.chassis_id, h.chassis_id) or 'no chassis'} "
            "(northbound hosting-chassis)"
            for h in found
            if isinstance(h, Hosted) and self.hosts.get(h.chassis_id) != host
        ) + tuple(
            f"gateway {a.address} not answering after the move"
            for a in found
            if isinstance(a, Answer) and not a.answered
        )
        return not waiting, waiting


@dataclass(frozen=True)
class GatewayWriter:
    """Re-checks and writes for one move at a time; thread-safe (no state of its own)."""

    ovn: NeutronOvn
    guard: JournalGuard
    usable: Callable[[Agent | None], bool]  # ``ExecutorOptions.usable``: the run's verdicts

    def recheck(self, move: GatewayMove) -> dict[str, int]:
        """The router's group now (chassis -> priority); ``SkipMoveError`` when the move is
        no longer wanted: its source left the group or is alive again."""
        group = {b.chassis_id: b.priority for b in self.ovn.group(move.router_id)}
        if move.source is None:
            if move.target in group:
                raise SkipMoveError("the chassis is in the router's group already")
            return group
        if move.source not in group:
            raise SkipMoveError(f"gateway chassis {move.source} is no longer in the router's group")
        if (
            move.kind is GatewayMoveKind.RAISE
            and group.get(move.target or "", -1) > group[move.source]
        ):
            raise SkipMoveError(f"gateway chassis {move.target} is above {move.source} already")
        if move.kind in (GatewayMoveKind.PROMOTE, GatewayMoveKind.DEMOTE, GatewayMoveKind.RAISE):
            return group  # a drain or a rebalance: its source is alive on purpose
        if any(c.id == move.source and self.usable(c) for c in self.ovn.list_chassis()):
            raise SkipMoveError(f"gateway chassis {move.source} is alive again: kept")
        return group

    def replace(self, move: GatewayMove, move_id: int, group: dict[str, int]) -> int | None:
        """Journal the intent, remove the source, add the target (each read back); the
        priority the target got (None for a removal only)."""
        source = move.source or ""
        self.guard.step(move_id, MoveStep.INTENT, target=move.target, detail=move.reason)
        if move.source is not None:
            self.ovn.remove(move.router_id, source)
            self.guard.step(move_id, MoveStep.UNBOUND)
        if move.target is None or move.target in group:
            return None
        used = {p for c, p in group.items() if c != source}
        priority = move.priority if move.priority not in used else bottom_priority(used)
        self.ovn.add(move.router_id, move.target, priority)
        self.guard.step(move_id, MoveStep.BOUND, target=move.target)
        return priority

    def promote(self, move: GatewayMove, move_id: int, group: dict[str, int]) -> int:
        """Journal the intent, raise the target above every chassis of the group (read
        back); the priority it got."""
        target = move.target or ""
        top = max(group.values(), default=0) + 1
        priority = move.priority if move.priority is not None and move.priority >= top else top
        self.guard.step(move_id, MoveStep.INTENT, target=target, detail=move.reason)
        if target in group:
            self.ovn.set_priority(move.router_id, target, priority)
        else:
            self.ovn.add(move.router_id, target, priority)
        self.guard.step(move_id, MoveStep.BOUND, target=target)
        return priority

    def demote(self, move: GatewayMove, move_id: int) -> int | None:
        """Lower the source below every other chassis of the group, read fresh (read back);
        the priority it got, None when it is at the bottom already (or as low as a free
        priority allows: another drained chassis holds the ones below) or left the group."""
        source = move.source or ""
        group = {b.chassis_id: b.priority for b in self.ovn.group(move.router_id)}
        others = {p for c, p in group.items() if c != source}
        if source not in group or not others or group[source] < min(others):
            return None
        priority = bottom_priority(others)
        if priority is None:
            raise SkipMoveError("no free priority below the group: left in place")
        if priority >= group[source]:
            return None  # every priority below it is taken (by chassis drained before): lowest
        self.guard.step(move_id, MoveStep.INTENT, detail=f"lower {source} to {priority}")
        self.ovn.set_priority(move.router_id, source, priority)
        self.guard.step(move_id, MoveStep.UNBOUND)
        return priority


def recover_gateways(
    ovn: NeutronOvn, journal: Journal, *, dry_run: bool
) -> tuple[list[str], frozenset[str]]:
    """Close the open moves of interrupted gateway operations, judged from each router's
    group now: one line per move, and the routers whose replacement was not added (the
    next plan tops them up)."""
    lines: list[str] = []
    short: set[str] = set()
    for op in journal.unfinished_operations():
        if not is_gateway_operation(op.kind):
            continue
        for record in (m for m in journal.moves(op.id) if not m.finished):
            outcome, detail = _judge(ovn, record)
            if outcome == "skipped" and record.target is not None:
                short.add(record.object_id)
            lines.append(f"operation {op.id}: router {record.object_id} {detail}")
            if not dry_run:
                journal.record_outcome(record.id, outcome, f"recovered: {detail}")
        if not dry_run:
            journal.finish_operation(op.id, OperationStatus.RECOVERED, "recovered gateway moves")
    return lines, frozenset(short)


def _judge(ovn: NeutronOvn, record: MoveRecord) -> tuple[str, str]:
    try:
        group = {b.chassis_id: b.priority for b in ovn.group(record.object_id)}
    except L3haError as exc:
        return "skipped", f"not readable ({exc}): left as found"
    done = record.source not in group and (record.target is None or record.target in group)
    shown = ", ".join(f"{c}={p}" for c, p in sorted(group.items())) or "no chassis"
    if not done:
        return "skipped", f"left as found ({shown})"
    return ("replaced" if record.target else "removed"), f"already done ({shown})"
