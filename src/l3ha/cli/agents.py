"""``l3ha agent list|show``: L3 (and DHCP) agents and their load. I/O: reads the cloud or a
snapshot, writes stdout.

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
    add_show_command,
    add_snapshot_option,
    command_group,
    load_weight_policy,
)
from l3ha.cli.output import (
    add_format_options,
    add_name_filter,
    emit,
    list_columns,
    name_matches,
)
from l3ha.cli.ovn import add_backend_option, list_by_backend, list_chassis
from l3ha.dhcp_model import DhcpSnapshot
from l3ha.errors import BadInputError
from l3ha.model import Agent, Router, Snapshot
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


def _hosted_routers(snapshot: Snapshot, agent: Agent) -> list[Router]:
    """The routers bound to ``agent`` (bindings of routers not listed left out). Pure."""
    routers = snapshot.routers_by_id
    return [
        routers[b.router_id] for b in snapshot.bindings_of_agent(agent.id) if b.router_id in routers
    ]


def agent_rows(
    snapshot: Snapshot, policy: WeightPolicy, names: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """One row per agent (whose host matches ``names``, if given), by host then id. Pure."""
    rows = []
    agents = [a for a in snapshot.agents if name_matches(a.host, names)]
    for agent in sorted(agents, key=lambda a: (a.host, a.id)):
        hosted = _hosted_routers(snapshot, agent)
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


DHCP_COLUMNS = ("host", "id", "az", "alive", "admin_state", "networks", "ports", "heartbeat")
DEFAULT_DHCP_COLUMNS = DHCP_COLUMNS[:7]
ALL_COLUMNS = ("type", "host", "id", "az", "alive", "admin_state", "routers", "networks", "ports")


def dhcp_agent_rows(snapshot: DhcpSnapshot, names: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """One row per DHCP agent: networks hosted and DHCP ports bound to its host. Pure."""
    return [
        {
            "type": "dhcp",
            "host": agent.host,
            "id": agent.id,
            "az": agent.availability_zone,
            "alive": agent.alive,
            "admin_state": "up" if agent.admin_state_up else "down",
            "networks": len(snapshot.networks_of_agent(agent.id)),
            "ports": snapshot.ports_on_host(agent.host),
            "heartbeat": agent.heartbeat_timestamp,
        }
        for agent in sorted(snapshot.agents, key=lambda a: (a.host, a.id))
        if name_matches(agent.host, names)
    ]


def _list_other_types(args: argparse.Namespace) -> int:
    """``--type dhcp|all``: read DHCP agents (and L3 agents for ``all``) from the cloud."""
    from l3ha.cli.common import open_cloud
    from l3ha.cloud.dhcp import NeutronDhcp

    if getattr(args, "snapshot", None):
        raise BadInputError("--snapshot files hold L3 agents only: use --type l3 with --snapshot")
    cloud = open_cloud(args)
    names = tuple(args.name)
    rows = dhcp_agent_rows(NeutronDhcp(cloud).read_dhcp_snapshot(), names)
    if args.agent_type == "dhcp":
        columns = list_columns(args, DEFAULT_DHCP_COLUMNS, DHCP_COLUMNS)
        emit(rows, args.format, columns, DHCP_COLUMNS, options=args)
        return 0
    policy = load_weight_policy(args)
    l3 = [{"type": "l3", **row} for row in agent_rows(cloud.read_snapshot(), policy, names)]
    rows = sorted(l3 + rows, key=lambda r: (r["host"], r["type"], r["id"]))
    every = tuple(dict.fromkeys((*ALL_COLUMNS, *AGENT_COLUMNS, *DHCP_COLUMNS)))
    emit(rows, args.format, list_columns(args, ALL_COLUMNS, every), every, options=args)
    return 0


def list_agents(args: argparse.Namespace) -> int:
    """Handler of ``l3ha agent list``."""
    if getattr(args, "agent_type", "l3") != "l3":
        return _list_other_types(args)
    return list_by_backend(args, _list_l3_agents, list_chassis)


def _list_l3_agents(args: argparse.Namespace, snapshot: Snapshot, policy: WeightPolicy) -> int:
    columns = list_columns(args, DEFAULT_AGENT_COLUMNS, AGENT_COLUMNS)
    rows = agent_rows(snapshot, policy, tuple(args.name))
    emit(rows, args.format, columns, AGENT_COLUMNS, options=args)
    return 0


def agent_record(snapshot: Snapshot, policy: WeightPolicy, ref: str) -> dict[str, Any]:
    """Everything about one agent (host, id or unique id prefix): its list row, its
    description and the routers it hosts, by name. Pure."""
    agent = snapshot.find_agent(ref)
    (row,) = [r for r in agent_rows(snapshot, policy) if r["id"] == agent.id]
    names = sorted(r.name or r.id for r in _hosted_routers(snapshot, agent))
    return {**row, "description": agent.description, "hosted_routers": names}


def register(subparsers: Any) -> None:
    """Add ``l3ha agent list`` and ``l3ha agent show``."""
    group = command_group(subparsers, "agent", "L3 agents: list and show them with their load")
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
    parser.add_argument(
        "--type",
        dest="agent_type",
        choices=("l3", "dhcp", "all"),
        default="l3",
        help="which agents: L3 (default), DHCP (host, id, AZ, alive, admin state, networks, "
        "DHCP ports), or all of both",
    )
    add_name_filter(parser, "agents on host")
    add_backend_option(parser)
    add_format_options(parser, long=True)
    parser.set_defaults(func=list_agents)
    show_texts = (
        "show one L3 agent: its list columns, description and hosted routers",
        "Show one L3 agent, given by host name, id or a unique id prefix: every column of "
        "'agent list' (heartbeat and started_at included), its description (l3ha marks "
        "drained agents there) and the names of the routers it hosts.",
        "host name, agent id or unique id prefix",
    )
    add_show_command(group, "agent", show_texts, agent_record)
