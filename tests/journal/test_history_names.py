"""The names an operation records, and the recovery messages that use them."""

from __future__ import annotations

from l3ha.journal import OperationRecord, OperationStatus
from l3ha.journal.history import recorded_names_of, router_label, with_names

ROUTER = "0597aab6-14d3-4dbc-a0ac-f4c9658de17e"
AGENT = "23a7711a-8133-4876-b7eb-dcd9e87a1613"


def operation(op_id: int, args: dict[str, object]) -> OperationRecord:
    return OperationRecord(op_id, "evacuate", args, "t0", None, OperationStatus.RUNNING, 1, "h", "")


def test_recorded_names_replace_ids_and_a_router_keeps_the_start_of_its_id() -> None:
    ops = [
        operation(1, {"names": {AGENT: "net-1"}}),
        operation(2, {"names": {ROUTER: "web"}}),
        operation(3, {"agent": "net-2"}),  # recorded before names were
    ]
    names = recorded_names_of(ops)
    assert with_names(f"still hosted by {AGENT}; not moved", names) == (
        "still hosted by net-1; not moved"
    )
    assert router_label(ROUTER, names) == "web (0597aab6)"
    assert router_label("unnamed-router-id", names) == "unnamed-router-id"
    assert with_names("no id here", names) == "no id here"
