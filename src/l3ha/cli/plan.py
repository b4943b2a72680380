"""``l3ha plan ACTION``: plan offline from a saved snapshot (or the live cloud), change nothing.

I/O: reads a snapshot file (``--snapshot``) or the cloud, writes the plan to stdout.
"""

from __future__ import annotations

import argparse
from typing import Any

from l3ha.cli.argtypes import add_count, non_negative_int
from l3ha.cli.common import (
    add_cloud_options,
    add_snapshot_option,
    command_group,
    warn_about_weights,
)
from l3ha.cli.output import add_format_options
from l3ha.cli.planning import (
    action_request,
    add_force_option,
    add_placement_options,
    add_router_selection,
)
from l3ha.operations import PLANNABLE, Action, make_plan


def register(sub: Any) -> None:
    """Add ``l3ha plan evacuate|drain|migrate|rebalance|repair``."""
    group = command_group(
        sub, "plan", "plan an action offline (from --snapshot FILE) without changing anything"
    )
    specs = {
        "evacuate": "plan moving every router off an agent",
        "drain": "plan draining an agent (HA make-before-break)",
        "migrate": "plan moving the given routers",
        "rebalance": "plan evening out routers over every live agent",
        "repair": "plan binding unhosted routers and replacing dead HA replicas",
    }
    for action in PLANNABLE:
        help_text = specs[action.value]
        p = group.add_parser(action.value, help=help_text, description=help_text)
        if action in ("evacuate", "drain"):
            p.add_argument("agent", metavar="AGENT", help="host name or agent id")
        add_force_option(p, evacuate=action == "evacuate")
        if action == "evacuate":
            add_router_selection(p, positional=False)
        if action == "migrate":
            add_router_selection(p, positional=True)
        if action == "rebalance":
            add_count(p, "--max-moves", None, "move at most N routers", kind=non_negative_int)
        add_snapshot_option(p)
        add_cloud_options(p)
        add_placement_options(p, targets=action not in ("repair",))
        add_format_options(p, columns=False)
        p.set_defaults(func=lambda a, action=action: _run_plan(action, a))


def _run_plan(action: Action, args: argparse.Namespace) -> int:
    from dataclasses import replace

    from l3ha.cli.actions import print_plan
    from l3ha.cli.common import load_weight_policy, read_weighed_world

    request = action_request(action, args, load_weight_policy(args))
    snapshot, weights = read_weighed_world(args, request.weights)
    request = replace(request, weights=weights)
    warn_about_weights(request.weights, snapshot)
    return print_plan(make_plan(request, snapshot), snapshot, args.format)
