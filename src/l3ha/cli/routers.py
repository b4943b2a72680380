"""``l3ha router list|show``: routers, weights, agents. I/O: reads cloud or snapshot, stdout."""

from __future__ import annotations

import argparse
from typing import Any

from l3ha.cli.common import (
    add_cloud_options,
    add_show_command,
    add_snapshot_option,
    command_group,
)
from l3ha.cli.output import (
    add_format_options,
    add_name_filter,
    emit,
    list_columns,
    name_matches,
)
from l3ha.cli.ovn import add_backend_option, list_by_backend, list_gateways
from l3ha.model import Router, Snapshot
from l3ha.weights import WeightPolicy

ROUTER_COLUMNS = (
    "id",
    "name",
    "ha",
    "distributed",
    "az_hints",
    "weight",
    "weight_source",
    "busy",
    "agents",
    "agent_ids",
    "tags",
    "project_id",
)
DEFAULT_ROUTER_COLUMNS = ROUTER_COLUMNS[:9]


def hosting_text(snapshot: Snapshot, router_id: str) -> list[str]:
    """``["net-1(active)", "net-2(standby)"]``: hosts of a router, sorted. Pure."""
    items = []
    for binding in snapshot.bindings_of_router(router_id):
        agent = snapshot.agents_by_id.get(binding.agent_id)
        host = agent.host if agent else binding.agent_id
        items.append(f"{host}({binding.ha_state})" if binding.ha_state else host)
    return sorted(items)


def select_routers(snapshot: Snapshot, agent_ref: str | None, unhosted: bool) -> list[Router]:
    """The routers to show: all, those on one agent, or the unhosted ones. Pure."""
    if unhosted:
        routers = list(snapshot.unhosted_routers())
    elif agent_ref:
        agent = snapshot.find_agent(agent_ref)
        ids = {b.router_id for b in snapshot.bindings_of_agent(agent.id)}
        routers = [r for r in snapshot.routers if r.id in ids]
    else:
        routers = list(snapshot.routers)
    return sorted(routers, key=lambda r: (r.name, r.id))


def router_rows(
    snapshot: Snapshot, routers: list[Router], policy: WeightPolicy
) -> list[dict[str, Any]]:
    """One row per router. Pure."""
    return [
        {
            "id": r.id,
            "name": r.name,
            "ha": r.ha,
            "distributed": r.distributed,
            "az_hints": list(r.availability_zone_hints),
            "weight": policy.weight(r),
            "weight_source": policy.source(r).value,
            "busy": policy.is_busy(r),
            "agents": hosting_text(snapshot, r.id),
            "agent_ids": sorted(b.agent_id for b in snapshot.bindings_of_router(r.id)),
            "tags": list(r.tags),
            "project_id": r.project_id,
        }
        for r in routers
    ]


def list_routers(args: argparse.Namespace) -> int:
    """Handler of ``l3ha router list`` (on ML2/OVN: ``l3ha.cli.ovn.list_gateways``)."""
    return list_by_backend(args, _list_l3_routers, list_gateways, not args.unhosted)


def _list_l3_routers(args: argparse.Namespace, snapshot: Snapshot, policy: WeightPolicy) -> int:
    routers = [
        r
        for r in select_routers(snapshot, args.agent, args.unhosted)
        if name_matches(r.name, args.name)
    ]
    columns = list_columns(args, DEFAULT_ROUTER_COLUMNS, ROUTER_COLUMNS)
    emit(router_rows(snapshot, routers, policy), args.format, columns, ROUTER_COLUMNS, options=args)
    return 0


def router_record(snapshot: Snapshot, policy: WeightPolicy, ref: str) -> dict[str, Any]:
    """Every column of one router (id or unique name). Pure."""
    (record,) = router_rows(snapshot, [snapshot.find_router(ref)], policy)
    return record


def register(subparsers: Any) -> None:
    """Add ``l3ha router list`` and ``l3ha router show``."""
    group = command_group(subparsers, "router", "routers: list and show them with weights")
    parser = group.add_parser(
        "list",
        help="list routers with their weight and hosting agents",
        description=(
            "List routers: id, name, ha, distributed, availability zone hints, weight and where "
            "it came from (weight_source: file, tag, ports, fips, prometheus or default), busy, "
            "and the agents hosting each one with their HA state, e.g. "
            "'net-1(active), net-2(standby)'. Extra columns: agent_ids, tags, project_id."
        ),
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--agent", metavar="HOST|ID", help="only routers hosted by this agent (host name or id)"
    )
    which.add_argument("--unhosted", action="store_true", help="only routers with no L3 agent")
    add_name_filter(parser, "routers named")
    add_cloud_options(parser)
    add_snapshot_option(parser)
    add_backend_option(parser)
    add_format_options(parser, long=True)
    parser.set_defaults(func=list_routers)
    show_texts = (
        "show one router: weight, busy, hosting agents with HA state, tags, project",
        "Show one router, given by id or unique name: every column of 'router list' "
        "(agent_ids, tags and project_id included).",
        "router id or unique name",
    )
    add_show_command(group, "router", show_texts, router_record, with_ha_state=True)
