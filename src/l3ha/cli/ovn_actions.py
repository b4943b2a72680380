"""``l3ha evacuate`` and ``drain`` on ML2/OVN: the gateway chassis actions' options, run
and output.
I/O: opens the cloud and the journal, writes the terminal.

Only parses options into a ``GatewayRequest``, calls ``l3ha.operations.ovn`` and prints
one row per router move (``-f json|yaml``: the run's summary), then the warnings and the
problems the verification found. Exit codes as for routers: 0 done, 1 a move failed or
the verification found a problem, 2 bad input, 3 refused by a safety gate.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from l3ha.cli.argtypes import positive_int
from l3ha.cli.output import emit, emit_document
from l3ha.cli.ovn import neutron_ovn, refuse_l3_only
from l3ha.errors import BadInputError
from l3ha.ovn_model import DEFAULT_MIN_CHASSIS, Backend

if TYPE_CHECKING:
    from l3ha.cloud.ovn import NeutronOvn
    from l3ha.executor import ExecutorOptions
    from l3ha.journal import Journal

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


def gateway_backend(args: argparse.Namespace) -> NeutronOvn | None:
    """The OVN cloud when ``--backend`` says so or (auto) the agents show it, else None;
    an OVN-only option on an L3 agent cloud and an L3-only one on OVN are refused."""
    wanted = Backend(getattr(args, "backend", Backend.AUTO))
    if wanted is Backend.L3_AGENT:
        ovn = None
    else:
        candidate = neutron_ovn(args)
        ovn = candidate if candidate.backend(wanted) is Backend.OVN else None
    if ovn is None and getattr(args, "min_chassis", None) is not None:
        raise BadInputError(
            "--min-chassis is for ML2/OVN gateway chassis: this cloud has L3 agents"
        )
    if ovn is not None:
        refuse_l3_only(args, L3_ONLY)
    return ovn


def run_gateway_action(
    action: str,
    args: argparse.Namespace,
    ovn: NeutronOvn,
    *,
    execution: ExecutorOptions,
    journal: Journal | None,
    say: Callable[[str], None],
) -> int:
    """``l3ha evacuate|drain CHASSIS`` on ML2/OVN (``journal``: None only for a dry run)."""
    from l3ha.clock import SystemClock
    from l3ha.operations.ovn import GatewayAction, GatewayContext, GatewayRequest, drain, evacuate

    request = GatewayRequest(
        GatewayAction(action),
        args.agent,
        min_chassis=getattr(args, "min_chassis", None) or DEFAULT_MIN_CHASSIS,
        execution=execution,
    )
    run = drain if request.action is GatewayAction.DRAIN else evacuate
    result = run(GatewayContext(ovn, journal, SystemClock(), say), request)
    for step in result.executed:
        if args.format != "table":
            emit_document(step.run.summary(), args.format)
        elif step.run.results:
            emit([r.as_row() for r in step.run.results], "table")
        for warning in step.run.warnings:
            say(f"warning: {warning}")
    for problem in result.problems:
        sys.stderr.write(f"l3ha: problem: {problem}\n")
    return result.exit_code
