"""``l3ha check`` on ML2/OVN: what is wrong with the routers' gateway chassis groups. Pure.

- CRITICAL: a router whose group has no live chassis (its gateway is dark), or no
  chassis at all;
- WARNING: a router with fewer live chassis than ``min_chassis`` (where the cloud has
  that many), and a router whose highest-priority chassis is dead: that chassis will
  pre-empt it back when it returns, a second outage (``l3ha evacuate`` prevents it);
- WARNING instead of the above when every gateway chassis reads dead at once: that is the
  control plane (a southbound outage), not the chassis;
- WARNING: a live chassis carrying more primaries than the mean plus ``threshold_pct``;
- WARNING: a router gateway port Neutron failed to bind (``binding:vif_type`` is
  ``binding_failed``, or it has no binding host): Neutron refuses to bind to an agent it
  thinks dead, e.g. while its agent cache lags after a burst of OVN events.
"""

from __future__ import annotations

from collections.abc import Sequence

from l3ha.checks import CheckResult, Problem, about, worst
from l3ha.hastate.audit import Severity
from l3ha.ovn_model import GatewayPort, OvnSnapshot


def control_plane_fault(world: OvnSnapshot) -> str | None:
    """Why no gateway action may act on ``world``: every gateway chassis reads dead at
    once (a southbound outage looks so: the control plane's fault, not the chassis')."""
    if world.chassis and not any(c.alive for c in world.chassis):
        return (
            "every gateway chassis reads dead: the control plane's fault (a southbound "
            "outage?), not the chassis'; nothing changed"
        )
    return None


def check_gateways(
    world: OvnSnapshot,
    min_chassis: int,
    threshold_pct: int,
    ports: Sequence[GatewayPort] = (),
) -> CheckResult:
    """The check's verdict on an ML2/OVN cloud (module docstring); ``ports``: the routers'
    gateway ports."""
    live = [c for c in world.chassis if c.alive]
    if world.chassis and not live:
        problems = [
            Problem(
                Severity.WARNING,
                "control_plane",
                f"every gateway chassis reads dead ({len(world.chassis)}): the control plane "
                "(southbound database?), not the chassis",
            )
        ]
    else:
        problems = [*_groups(world, min(min_chassis, len(live))), *_imbalance(world, threshold_pct)]
    unbound = sorted({p.router_id for p in ports if p.unbound})
    if unbound:
        words = "whose gateway port Neutron failed to bind (binding_failed or no host)"
        problems.append(about(Severity.WARNING, "gateway_unbound", unbound, words))
    perf = {
        "chassis": len(world.chassis),
        "dead_chassis": len(world.chassis) - len(live),
        "routers": len(world.routers),
        "unbound_gateway_ports": sum(1 for p in ports if p.unbound),
    }
    return CheckResult(worst(problems), tuple(problems), perf)


def _groups(world: OvnSnapshot, wanted: int) -> list[Problem]:
    dark, short, failback = [], [], []
    for router in sorted(world.routers, key=lambda r: r.id):
        group = world.group(router.id)
        alive = world.live_chassis(router.id)
        if not alive:
            dark.append(router.id)
        elif len(alive) < wanted:
            short.append(router.id)
        if group and not world.alive(group[0].chassis_id) and alive:
            failback.append(router.id)
    problems = []
    if dark:
        problems.append(
            about(Severity.CRITICAL, "no_live_chassis", dark, "with no live gateway chassis")
        )
    if short:
        words = f"with fewer than {wanted} live gateway chassis"
        problems.append(about(Severity.WARNING, "few_chassis", short, words))
    if failback:
        words = "whose highest-priority chassis is dead (it will fail them back: evacuate it)"
        problems.append(about(Severity.WARNING, "failback_pending", failback, words))
    return problems


def _imbalance(world: OvnSnapshot, threshold_pct: int) -> list[Problem]:
    live = [c for c in world.chassis if c.alive]
    counts = {c.host: len(world.primaries_of(c.id)) for c in live}
    if not counts:
        return []
    mean = sum(counts.values()) / len(counts)
    limit = mean * (1 + threshold_pct / 100)
    over = sorted(h for h, n in counts.items() if n > limit and n - mean >= 1)
    if not over:
        return []
    shown = ", ".join(f"{h} ({counts[h]})" for h in over)
    detail = f"primaries imbalanced: {shown} against a mean of {mean:.1f}"
    return [Problem(Severity.WARNING, "imbalance", detail)]
