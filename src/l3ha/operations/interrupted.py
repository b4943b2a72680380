"""Finishing what a crash interrupted, before an action plans. I/O: cloud, journal (via ctx).

Every action that moves routers first asks the journal for operations that
were cut short (a killed process, a lost leader) and lets the executor's
recovery finish their moves from the cloud's actual state. The interrupted
operations are returned so that ``repair`` (and a daemon taking over) can
run their evacuations and drains again for what they had not reached.
"""

from __future__ import annotations

from l3ha.executor import recover
from l3ha.executor.dhcp_steps import is_dhcp_operation
from l3ha.executor.gateway_steps import is_gateway_operation
from l3ha.journal import OperationRecord
from l3ha.journal.history import recorded_names_of, router_label, with_names
from l3ha.operations.context import OperationContext


def finish_interrupted(ctx: OperationContext, dry_run: bool) -> tuple[bool, list[OperationRecord]]:
    """Finish the moves of interrupted operations; whether every router ended hosted,
    and the operations that were interrupted."""
    if ctx.journal is None:
        return True, []
    unfinished = [
        op
        for op in ctx.journal.unfinished_operations()
        if not is_dhcp_operation(op.kind) and not is_gateway_operation(op.kind)
    ]  # DHCP operations are finished by l3ha.operations.dhcp; OVN gateway ones are left
    if not unfinished:
        return True, []
    for op in unfinished:
        ctx.notify(
            f"operation {op.id} ({op.kind}, started {op.started}) was interrupted; finishing it"
        )
    results = recover(ctx.cloud, ctx.journal, ctx.clock, operations=unfinished, dry_run=dry_run)
    names = recorded_names_of(unfinished)  # hosts and router names, as the operations saw them
    for result in results:
        detail = with_names(result.detail, names)
        label = router_label(result.router_id, names)
        ctx.notify(f"recovered router {label}: {result.action.value} {detail}")
    return all(r.ok for r in results), unfinished
