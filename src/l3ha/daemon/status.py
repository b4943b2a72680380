"""The watch daemon's status file, so ``l3ha check`` can tell what the daemon sees.
I/O: writes and reads ``watch-status.json`` in the state directory.

Every cycle the daemon replaces the file atomically (write, fsync-free rename):
who it is, whether it leads, when the cycle ran, the halts in force with their
reasons, agents per verdict and the partitioned hosts; with ``--dhcp``, the
same for the DHCP agents under ``dhcp`` (its halts, verdicts and read
error). Its ``state`` is ``running``; a daemon that stops cleanly (SIGTERM,
``--once``) writes its last cycle's document once more with ``state:
stopped`` and the time (``stopped_document``), so ``l3ha check`` can tell a stopped daemon from a
hung one. ``read_status`` gives
``None`` when there is no file, and raises ``BadInputError`` when it cannot be
understood.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from l3ha.errors import BadInputError
from l3ha.hastate.statefile import read_state
from l3ha.model import Halt

STATUS_FILE = "watch-status.json"
RUNNING = "running"
STOPPED = "stopped"


def status_document(
    *,
    member: str,
    leader: bool,
    updated: float,
    interval: float,
    halts: Sequence[Halt],
    verdicts: Mapping[str, int],
    partitioned: Sequence[str],
    read_error: str = "",
    dhcp: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The document written each cycle (``updated``: unix time; ``dhcp``: see
    ``dhcp_status``, absent when the daemon does not watch DHCP)."""
    document: dict[str, Any] = {
        "state": RUNNING,
        "member": member,
        "leader": leader,
        "updated": round(updated, 3),
        "interval": interval,
        "partitioned": list(partitioned),
        **dhcp_status(halts, verdicts, read_error),
    }
    if dhcp is not None:
        document["dhcp"] = dict(dhcp)
    return document


def stopped_document(
    last: Mapping[str, Any] | None, *, member: str, stopped: float, interval: float
) -> dict[str, Any]:
    """The last document of a daemon that stopped cleanly at unix time ``stopped``: what its
    last cycle saw (``last``, when one ran), marked stopped."""
    document = dict(last) if last is not None else status_document(
        member=member, leader=False, updated=stopped, interval=interval, halts=(),
        verdicts={}, partitioned=(),
    )  # fmt: skip
    document.update(state=STOPPED, stopped=round(stopped, 3))
    return document


def dhcp_status(
    halts: Sequence[Halt], verdicts: Mapping[str, int], read_error: str = ""
) -> dict[str, Any]:
    """The ``dhcp`` part of the document: the DHCP side's halts, verdicts and read error
    (the main kind's are the same fields at the top)."""
    return {
        "halts": [{"reason": h.reason.value, "message": h.message} for h in halts],
        "verdicts": dict(verdicts),
        "read_error": read_error,
    }


def write_status(state_dir: Path, document: Mapping[str, Any]) -> None:
    """Replace the status file atomically (mode 0600 like the journal)."""
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=".watch-status.", dir=state_dir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(document, out, sort_keys=True)
        os.replace(tmp, state_dir / STATUS_FILE)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_status(state_dir: Path) -> dict[str, Any] | None:
    """The last status the daemon wrote, or ``None`` when it never ran here."""
    path = state_dir / STATUS_FILE
    doc = read_state(path)  # None, a JSON object, or a one-line BadInputError
    if doc is not None and not isinstance(doc.get("updated"), int | float):
        raise BadInputError(f"{path}: not a watch status document (no 'updated' time)")
    return doc
