"""``l3ha evacuate``, ``drain``, ``undrain`` and ``rebalance`` on ML2/OVN: the gateway
chassis actions' options, run and output.
I/O: opens the cloud and the journal, writes the terminal.

Only parses options into a ``GatewayRequest``, calls ``l3ha.operations.ovn`` and prints
one row per router move (``-f json|yaml``: the run's summary), then the warnings and the
problems the verification found; a rebalance also prints its lower bound and the primaries
per chassis before and after (planned, for a dry run). Exit codes as for routers: 0 done,
1 a move failed or the verification found a problem, 2 bad input, 3 refused by a safety
gate.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from l3ha.cli.argtypes import positive_int
from l3ha.cli.execution import executor_options, open_journal, say
from l3ha.cli.output import emit, emit_document
from l3ha.cli.ovn import neutron_ovn, refuse_l3_only
from l3ha.errors import BadInputError
from l3ha.ovn_model import DEFAULT_MIN_CHASSIS, Backend

if TYPE_CHECKING:
    from l3ha.cloud.ovn import NeutronOvn
    from l3ha.executor import ExecutorOptions
    from l3ha.executor.gateway_steps import GatewayProbe
    from l3ha.operations.ovn import GatewayContext, GatewayExecuted, GatewayResult

#: How long one probe of a gateway address waits for its answer (``--probe``).
PROBE_TIMEOUT_S = 1.0
#: Options of ``l3ha evacuate`` that have no meaning for gateway chassis.
L3_ONLY = (
    "to",
    "max_routers_per_agent",
    "max_weight_per_agent",
    "strict_az",
    "force",
    "routers",
    "router_file",
    "skip_unknown",
)


def add_ovn_options(parser: argparse.ArgumentParser) -> None:
    """``--min-chassis``, for a command that also runs on ML2/OVN."""
    parser.add_argument(
        "--min-chassis",
        type=positive_int,
        metavar="N",
        help="ML2/OVN: live gateway chassis each router keeps, where the cloud has them "
        f"(default: {DEFAULT_MIN_CHASSIS})",
    )


def add_drain_check_options(parser: argparse.ArgumentParser) -> None:
    """``--probe`` and ``--ovn-nb``, for ``l3ha drain`` on ML2/OVN."""
    parser.add_argument(
        "--probe",
        metavar="tcp:PORT|icmp",
        help="ML2/OVN: after moving a router's gateway, wait until its gateway addresses "
        "answer this probe (icmp needs root) before counting the move done; the canary "
        "first, a router still dark after --port-timeout is a problem (exit 1)",
    )
    parser.add_argument(
        "--ovn-nb",
        metavar="unix:PATH|tcp:IP:PORT",
        help="ML2/OVN: OVN's northbound database (read only; OVN 23.09 or later): after "
        "moving a router's gateway, wait until its hosting-chassis is the new chassis; "
        "the canary first, a router not hosted there after --port-timeout is a problem",
    )


def northbound_hosting(args: argparse.Namespace) -> Callable[[], dict[str, str]] | None:
    """What ``--ovn-nb`` reads (None without it), read once here: a bad address, a database
    that does not answer or has no hosting-chassis fails before anything is written."""
    from l3ha.cloud.ovn_nb import NorthboundReader, parse_nb_address

    text = getattr(args, "ovn_nb", None)
    if text is None:
        return None
    reader = NorthboundReader(parse_nb_address(text))
    reader.hosting()
    return reader.hosting


def gateway_probe(args: argparse.Namespace) -> GatewayProbe | None:
    """The probe ``--probe`` asks for (None without it); bad input and an ICMP probe this
    process may not send fail here, before anything is read or written."""
    from l3ha.daemon.dataplane import ensure_probe_possible, parse_probe_spec, probe_gateways

    text = getattr(args, "probe", None)
    if text is None:
        return None
    spec = parse_probe_spec(text)
    ensure_probe_possible(spec)
    return lambda addresses: probe_gateways(spec, addresses, PROBE_TIMEOUT_S)


def gateway_backend(
    args: argparse.Namespace, cloud: Any = None, l3_only: tuple[str, ...] = L3_ONLY
) -> NeutronOvn | None:
    """The OVN cloud (of ``cloud``, else of the options) when ``--backend`` says so or (auto)
    the agents show it, else None; an OVN-only option on an L3 agent cloud and an
    ``l3_only`` one on OVN are refused."""
    from l3ha.cloud.ovn import NeutronOvn

    wanted = Backend(getattr(args, "backend", Backend.AUTO))
    if wanted is Backend.L3_AGENT:
        ovn = None
    else:
        candidate = neutron_ovn(args) if cloud is None else NeutronOvn(cloud)
        ovn = candidate if candidate.backend(wanted) is Backend.OVN else None
    for name in ("min_chassis", "probe", "ovn_nb"):
        if ovn is None and getattr(args, name, None) is not None:
            option = "--" + name.replace("_", "-")
            raise BadInputError(
                f"{option} is for ML2/OVN gateway chassis: this cloud has L3 agents"
            )
    if ovn is not None:
        refuse_l3_only(args, l3_only)
    return ovn


def run_gateway_action(action: str, args: argparse.Namespace, ovn: NeutronOvn) -> int:
    """``l3ha evacuate|drain|undrain|rebalance`` on ML2/OVN."""
    from l3ha.clock import SystemClock
    from l3ha.operations.ovn import GatewayAction, GatewayContext, GatewayRequest, evacuate_or_drain

    execution = executor_options(args)
    with open_journal(args, execution.dry_run) as journal:
        ctx = GatewayContext(ovn, journal, SystemClock(), say)
        if action in (GatewayAction.REBALANCE, GatewayAction.UNDRAIN):
            result = _run_rebalance(action, args, ctx, execution)
        else:
            request = GatewayRequest(
                GatewayAction(action),
                args.agent,
                min_chassis=getattr(args, "min_chassis", None) or DEFAULT_MIN_CHASSIS,
                execution=execution,
                probe=gateway_probe(args),
                northbound=northbound_hosting(args),
            )
            result = evacuate_or_drain(ctx, request)
    for step in result.executed:
        _print_step(step, args.format)
    for problem in result.problems:
        sys.stderr.write(f"l3ha: problem: {problem}\n")
    return result.exit_code


def _run_rebalance(
    action: str, args: argparse.Namespace, ctx: GatewayContext, execution: ExecutorOptions
) -> GatewayResult:
    """``l3ha rebalance`` or ``l3ha undrain CHASSIS [--rebalance]`` on ML2/OVN."""
    from l3ha.cli.common import load_weight_policy
    from l3ha.cli.weighing import measure_options, weigh
    from l3ha.operations.ovn import GatewayAction
    from l3ha.operations.ovn_rebalance import RebalanceRequest, rebalance, undrain

    measure_options(args)  # a bad combination fails before the cloud is read
    weights = weigh(args, load_weight_policy(args), ctx.ovn.cloud)
    request = RebalanceRequest(weights, getattr(args, "max_moves", None), execution)
    if action == GatewayAction.REBALANCE:
        return rebalance(ctx, request)
    return undrain(ctx, args.agent, request, bool(getattr(args, "rebalance", False)))


def _print_step(step: GatewayExecuted, fmt: str) -> None:
    """One plan's run: rows (or the summary document), its lower bound, the spread."""
    bound = step.plan.lower_bound
    if fmt != "table":
        doc = step.run.summary()
        if bound is not None:
            doc |= {"lower_bound": bound, "primaries": primaries_spread(step)}
        emit_document(doc, fmt)
    elif step.run.results:
        emit([r.as_row() for r in step.run.results], "table")
    if fmt == "table" and bound is not None:
        spread = primaries_spread(step)
        shown = ", ".join(f"{h} {n[0]} -> {n[1]}" for h, n in spread.items())
        sys.stdout.write(f"{len(step.plan.moves)} move(s); lower bound {bound}\n")
        sys.stdout.write(f"primaries per chassis: {shown}\n")
    for warning in step.run.warnings:
        sys.stderr.write(f"l3ha: warning: {warning}\n")


def primaries_spread(step: GatewayExecuted) -> dict[str, tuple[int, int]]:
    """Primaries per live chassis host before the plan and after its moves (planned or
    done: a move not done counts where it was). Pure."""
    from collections import Counter

    world = step.snapshot
    done = {"moved", "planned"}
    after = {r.move.router_id: r.move.target for r in step.run.results if r.outcome in done}
    before = Counter(world.primary(r.id) for r in world.routers)
    then = Counter(after.get(r.id) or world.primary(r.id) for r in world.routers)
    live = sorted((c for c in world.chassis if c.alive), key=lambda c: c.host)
    return {c.host: (before[c.id], then[c.id]) for c in live}
