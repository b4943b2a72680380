"""``--backend`` and the ML2/OVN views of ``agent list`` and ``router list``. I/O: reads the
cloud, writes stdout.

On ML2/OVN the agents are gateway chassis and a router's placement is its chassis group
with priorities. ``--backend auto`` (the default) takes the L3 path first and looks for
gateway chassis only when the cloud lists no L3 agent, so an L3 cloud pays no extra call
(``detected_ovn``, also used by ``check``); ``refuse_l3_only`` is the one-line refusal of
an option that means nothing on ML2/OVN (also used by ``evacuate`` and ``drain``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from l3ha.cli.common import load_weight_policy, open_cloud, read_weighed_world, warn_about_weights
from l3ha.cli.output import emit, list_columns, name_matches
from l3ha.cli.weighing import weigh
from l3ha.errors import BadInputError
from l3ha.model import Router, Snapshot
from l3ha.ovn_model import Backend, OvnSnapshot
from l3ha.weights import WeightPolicy

if TYPE_CHECKING:
    from l3ha.cloud.ovn import NeutronOvn

CHASSIS_COLUMNS = ("host", "id", "az", "alive", "routers", "primaries", "busy_primaries", "weight")
GATEWAY_COLUMNS = ("id", "name", "az_hints", "weight", "busy", "primary", "chassis", "chassis_ids")


def add_backend_option(parser: argparse.ArgumentParser) -> None:
    """``--backend auto|l3-agent|ovn``."""
    parser.add_argument(
        "--backend",
        choices=[b.value for b in Backend],
        default=Backend.AUTO.value,
        help="the cloud's kind of router placement: L3 agents or ML2/OVN gateway chassis "
        "(default: auto, told from the agents the cloud lists)",
    )


def neutron_ovn(args: argparse.Namespace) -> NeutronOvn:
    """The cloud of ``args`` as ML2/OVN (imports the SDK only now, when a command runs)."""
    from l3ha.cloud.ovn import NeutronOvn

    return NeutronOvn(open_cloud(args))


def list_by_backend(
    args: argparse.Namespace,
    list_l3: Callable[[argparse.Namespace, Snapshot, WeightPolicy], int],
    list_ovn: Callable[[argparse.Namespace, NeutronOvn], int],
    with_ha_state: bool = False,
) -> int:
    """``agent list``, ``router list``: ``list_ovn`` with ``--backend ovn`` (``--snapshot``
    refused) or on a cloud ``detected_ovn`` finds, else ``list_l3`` over the weighed snapshot
    (after its weight warnings)."""
    if Backend(getattr(args, "backend", Backend.AUTO)) is Backend.OVN:
        refuse_l3_only(args, ())
        return list_ovn(args, neutron_ovn(args))
    snapshot, policy = read_weighed_world(args, with_ha_state=with_ha_state)
    gateways = detected_ovn(args, snapshot)
    if gateways is not None:
        return list_ovn(args, gateways)
    warn_about_weights(policy, snapshot)
    return list_l3(args, snapshot, policy)


def detected_ovn(
    args: argparse.Namespace, snapshot: Snapshot, l3_only: tuple[str, ...] = ()
) -> NeutronOvn | None:
    """With ``--backend auto``: the OVN reader when the cloud lists no L3 agent but gateway
    chassis (never for a ``--snapshot`` file), else None."""
    if Backend(getattr(args, "backend", Backend.AUTO)) is not Backend.AUTO:
        return None
    if snapshot.agents or getattr(args, "snapshot", None):
        return None
    ovn = neutron_ovn(args)
    if not ovn.list_chassis():
        return None
    refuse_l3_only(args, l3_only)
    return ovn


def refuse_l3_only(args: argparse.Namespace, options: tuple[str, ...]) -> None:
    """One line for an option that has no meaning on ML2/OVN."""
    for option in ("snapshot", *options):
        if getattr(args, option, None):
            flag = "--" + option.replace("_", "-")
            raise BadInputError(f"{flag} is for L3 agents: this is an ML2/OVN cloud")


def read_ovn_world(args: argparse.Namespace, ovn: NeutronOvn) -> tuple[OvnSnapshot, WeightPolicy]:
    world = ovn.read_ovn_snapshot()
    return world, weigh(args, load_weight_policy(args), ovn.cloud)


def chassis_rows(
    world: OvnSnapshot, policy: WeightPolicy, names: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """One row per gateway chassis, by host then id. Pure."""
    rows = []
    for chassis in sorted(world.chassis, key=lambda c: (c.host, c.id)):
        if not name_matches(chassis.host, names):
            continue
        primaries = [world.routers_by_id[r] for r in world.primaries_of(chassis.id)]
        rows.append(
            {
                "host": chassis.host,
                "id": chassis.id,
                "az": chassis.availability_zone,
                "alive": chassis.alive,
                "routers": len(world.routers_of(chassis.id)),
                "primaries": len(primaries),
                "busy_primaries": sum(1 for r in primaries if policy.is_busy(r)),
                "weight": sum(policy.weight(r) for r in primaries),
            }
        )
    return rows


def gateway_rows(
    world: OvnSnapshot, routers: list[Router], policy: WeightPolicy
) -> list[dict[str, Any]]:
    """One row per router: its chassis highest priority first, ``host(priority)``. Pure."""
    rows = []
    for router in routers:
        group = world.group(router.id)
        primary = world.chassis_by_id.get(world.primary(router.id) or "")
        rows.append(
            {
                "id": router.id,
                "name": router.name,
                "az_hints": list(router.availability_zone_hints),
                "weight": policy.weight(router),
                "busy": policy.is_busy(router),
                "primary": primary.host if primary else None,
                "chassis": [f"{_host(world, b.chassis_id)}({b.priority})" for b in group],
                "chassis_ids": [b.chassis_id for b in group],
            }
        )
    return rows


def _host(world: OvnSnapshot, chassis_id: str) -> str:
    chassis = world.chassis_by_id.get(chassis_id)
    return chassis.host if chassis else chassis_id


def list_chassis(args: argparse.Namespace, ovn: NeutronOvn) -> int:
    """``l3ha agent list`` on ML2/OVN."""
    world, policy = read_ovn_world(args, ovn)
    columns = list_columns(args, CHASSIS_COLUMNS, CHASSIS_COLUMNS)
    rows = chassis_rows(world, policy, tuple(args.name))
    emit(rows, args.format, columns, CHASSIS_COLUMNS, options=args)
    return 0


def list_gateways(args: argparse.Namespace, ovn: NeutronOvn) -> int:
    """``l3ha router list`` on ML2/OVN (``--agent`` names a chassis)."""
    world, policy = read_ovn_world(args, ovn)
    routers = sorted(world.routers, key=lambda r: (r.name, r.id))
    if args.agent:
        on = set(world.routers_of(world.find_chassis(args.agent).id))
        routers = [r for r in routers if r.id in on]
    if args.unhosted:
        routers = [r for r in routers if not world.group(r.id)]
    routers = [r for r in routers if name_matches(r.name, args.name)]
    columns = list_columns(args, GATEWAY_COLUMNS[:7], GATEWAY_COLUMNS)
    emit(gateway_rows(world, routers, policy), args.format, columns, GATEWAY_COLUMNS, options=args)
    return 0
