"""Putting a router back after an unexpected error or an unhosted end of a move.

I/O: reads bindings and agents from the cloud, binds routers, journals each
step (all through ``MoveWriter``), sleeps on the injected clock between
rounds. When a move fails in a way its own steps did not handle (an API that
kept failing past the cloud's retries, a bug), or ends with the router on no agent
(every bind failed, e.g. during an API outage), the router may be dark.
Before reporting that, this module keeps trying, for
``ExecutorOptions.salvage_patience`` seconds, to read the router's bindings
and, if it has none, to bind it to the planned target, another candidate or
its source (when usable). Only then does it report the router UNHOSTED
(or, if its bindings could never be read, FAILED and possibly without an
agent), loudly.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from l3ha.executor.candidates import why_not
from l3ha.executor.outcome import MoveOutcome, MoveResult
from l3ha.executor.steps import NO_AGENT, MoveWriter, RouterGoneError
from l3ha.journal import MoveStep
from l3ha.kinds.base import Written
from l3ha.model import Move, MoveKind

log = logging.getLogger(__name__)


def salvage(
    writer: MoveWriter, move: Move, move_id: int, candidates: list[str], error: object
) -> MoveResult | Written:
    """Judge (and if needed restore) the router from the cloud; see the module docstring.

    ``error``: what went wrong (an exception or a reason), quoted in the result.
    """
    patience = writer.options.salvage_patience
    deadline = writer.clock.monotonic() + patience
    last = ""
    unhosted: MoveResult | None = None
    attempt = 0
    while True:
        attempt += 1
        try:
            outcome = _salvage_once(writer, move, move_id, candidates, error)
        except RouterGoneError:
            return MoveResult(move, MoveOutcome.SKIPPED, "the router was deleted meanwhile")
        except Exception as exc:  # keep trying until the patience runs out
            last = str(exc) or type(exc).__name__
            log.warning("salvaging router %s (round %d): %s", move.router_id, attempt, last)
        else:
            if isinstance(outcome, Written) or outcome.outcome is not MoveOutcome.UNHOSTED:
                return outcome
            unhosted = outcome  # no agent took it (yet): try again while patient
        delay = writer.options.backoff_delay(attempt)
        if writer.guard.error or writer.clock.monotonic() + delay > deadline:
            break
        writer.clock.sleep(delay)
    if unhosted is not None:  # the runner logs it as an error
        return unhosted
    log.error("router %s MAY HAVE NO AGENT: %s; then: %s", move.router_id, error, last)
    return MoveResult(
        move,
        MoveOutcome.FAILED,
        f"{error}; then for {patience:g}s its bindings could not be read or restored "
        f"({last}): the router MAY HAVE NO AGENT, run l3ha repair",
    )


def _salvage_once(
    writer: MoveWriter, move: Move, move_id: int, candidates: list[str], error: object
) -> MoveResult | Written:
    hosting = writer.hosting(move.router_id)
    if hosting:
        return _judge_hosted(writer, move, hosting, error)
    if writer.guard.error:  # no intent can be recorded: write nothing blind
        return MoveResult(
            move,
            MoveOutcome.UNHOSTED,
            f"{NO_AGENT}{error}; not re-bound: the journal cannot be written",
        )
    first, rest, reasons = writer.first_eligible(move, candidates)
    if first is not None:
        writer.guard.step(
            move_id, MoveStep.INTENT, target=first.id, detail=f"salvage after: {error}"
        )
        written, errors = writer.bind_somewhere(move, move_id, rest, first)
        if written is not None:
            return replace(written, note=f"re-bound after: {error}")
        reasons += errors
        hosting = writer.hosting(move.router_id)
        if hosting:  # someone else bound it meanwhile
            return _judge_hosted(writer, move, hosting, error)
    rolled = writer.rollback_to_source(move, move_id)
    if rolled is not None:
        return MoveResult(
            move, MoveOutcome.ROLLED_BACK, f"{error}; re-bound to its source", target=rolled
        )
    why = "; ".join(reasons) or "no eligible agent"
    return MoveResult(
        move,
        MoveOutcome.UNHOSTED,
        f"{NO_AGENT}{error}; then no agent took it back ({why}) and the source is not usable",
    )


def _judge_hosted(
    writer: MoveWriter, move: Move, hosting: set[str], error: object
) -> MoveResult | Written:
    """The router is hosted: report where, waiting for ports when it reached a new agent."""
    where = ", ".join(sorted(hosting))
    if move.kind is MoveKind.REMOVE_REPLICA:
        if move.source not in hosting:
            return MoveResult(move, MoveOutcome.MOVED, f"replica removed despite: {error}")
        return MoveResult(move, MoveOutcome.FAILED, f"{error} (replica kept; hosted by {where})")
    if move.kind is MoveKind.ADD_REPLICA:
        landed = move.target if move.target in hosting else None
    elif move.source in hosting:
        landed = None
    else:  # a move or bind that ended on the target or on a fallback candidate
        landed = move.target if move.target in hosting else sorted(hosting)[0]
    if landed is None:
        return MoveResult(move, MoveOutcome.FAILED, f"{error} (hosted by {where})")
    agent = writer.agent(landed)
    if agent is None:
        return MoveResult(move, MoveOutcome.FAILED, f"{error} (hosted by {where})")
    if not writer.options.usable(agent):  # e.g. Neutron scheduled it there, and that agent is gone
        reason = f"{error} (hosted by {agent.host}, which {why_not(agent).split(' ', 1)[1]})"
        return MoveResult(move, MoveOutcome.FAILED, reason, target=agent.id)
    return Written(landed, agent.host, 0, f"bound to {agent.host} despite: {error}")
