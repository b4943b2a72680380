"""``l3ha agent list``: L3 agents and their load. I/O: reads the cloud or a snapshot, writes stdout.

``heartbeat_age`` is approximate on purpose: it is this machine's clock at
the time of the read minus the server's heartbeat timestamp, so clock skew
between the two shows up in it. It is for people; l3ha's own liveness
judgement never subtracts clocks (it watches the heartbeat value change).
The raw server timestamp is the ``heartbeat`` column.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from l3ha.cli.common import (
    add_cloud_options,
    add_snapshot_option,
    command_group,
    load_weight_policy,
    warn_about_weights,
)
from l3ha.cli.output import add_format_options, emit
from l3ha.cli.weighing import read_weighed_world
from l3ha.model import Agent, Snapshot
from l3ha.weights import WeightPolicy

AGENT_COLUMNS = (
    "host",
    "id",
    "az",
    "mode",
    "alive",
    "admin_state",
    "heartbeat_age",
    "routers",
    "busy",
    "weight",
    "heartbeat",
    "started_at",
)
DEFAULT_AGENT_COLUMNS = AGENT_COLUMNS[:10]


def parse_timestamp(text: str) -> datetime | None:
    """A Neutron timestamp (naive UTC ``YYYY-MM-DD HH:MM:SS`` or ISO with ``Z``) as aware UTC."""
    if not text:
        return None
    try:
        stamp = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def heartbeat_age(agent: Agent, observed_at: str) -> float | None:
    """Seconds from the agent's heartbeat to the observation time (approximate, see module doc)."""
    seen = parse_timestamp(observed_at)
    beat = parse_timestamp(agent.heartbeat_timestamp)
    if seen is None or beat is None:
        return None
    return round((seen - beat).total_seconds(), 1)


def agent_rows(snapshot: Snapshot, policy: WeightPolicy) -> list[dict[str, Any]]:
    """One row per agent, sorted by host then id. Pure."""
    rows = []
    for agent in sorted(snapshot.agents, key=lambda a: (a.host, a.id)):
        hosted = [
            snapshot.routers_by_id[b.router_id]
            for b in snapshot.bindings_of_agent(agent.id)
            if b.router_id in snapshot.routers_by_id
        ]
        rows.append(
            {
                "host": agent.host,
                "id": agent.id,
                "az": agent.availability_zone,
                "mode": str(agent.mode),
                "alive": agent.alive,
                "admin_state": "up" if agent.admin_state_up else "down",
                "heartbeat_age": heartbeat_age(agent, snapshot.observed_at),
                "routers": len(hosted),
                "busy": sum(1 for r in hosted if policy.is_busy(r)),
                "weight": sum(policy.weight(r) for r in hosted),
                "heartbeat": agent.heartbeat_timestamp,
                "started_at": agent.started_at,
            }
        )
    return rows


def list_agents(args: argparse.Namespace) -> int:
    """Handler of ``l3ha agent list``."""
    policy = load_weight_policy(args)
    snapshot, policy = read_weighed_world(args, policy)
    warn_about_weights(policy, snapshot)
    columns = args.column or list(DEFAULT_AGENT_COLUMNS)
    emit(agent_rows(snapshot, policy), args.format, columns, AGENT_COLUMNS)
    return 0


def register(subparsers: Any) -> None:
    """Add ``l3ha agent list``."""
    group = command_group(subparsers, "agent", "L3 agents: list them with their load")
    parser = group.add_parser(
        "list",
        help="list L3 agents with their routers, busy routers and weight",
        description=(
            "List every L3 agent: host, id, availability zone, mode, the server's alive flag, "
            "admin state, approximate heartbeat age (this machine's clock minus the server's "
            "heartbeat timestamp; clock skew shows up in it), routers hosted, busy routers and "
            "total weight. Extra columns: heartbeat, started_at."
        ),
    )
    add_cloud_options(parser)
    add_snapshot_option(parser)
    add_format_options(parser)
    parser.set_defaults(func=list_agents)
