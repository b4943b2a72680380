"""The monitor's state file: replaced atomically, never moved backwards. I/O: files, flock.

The file holds one JSON document: the latest transition plus what it is about
(netns, device, VIP). It is written to a temporary file in the same directory,
flushed to disk and renamed over the old one, so a reader sees the old or the
new document, never half of one. A write whose sequence number is not higher
than the one on disk is refused, and one monitor at a time holds the file
(an exclusive lock on ``FILE.lock``).
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

from l3ha.errors import BadInputError, UserError
from l3ha.hastate.vipstate import Transition


def read_state(path: Path) -> dict[str, Any] | None:
    """The document in ``path``; None when there is none; BadInputError when it is malformed."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BadInputError(f"cannot read state file {path}: {exc.strerror}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInputError(f"state file {path} is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise BadInputError(f"state file {path} does not hold a JSON object")
    return data


def read_transition(path: Path) -> Transition | None:
    """The transition recorded in ``path``, or None when there is no file."""
    data = read_state(path)
    return None if data is None else Transition.from_dict(data)


class StateFile:
    """The one writer of a state file (holds ``FILE.lock`` while open)."""

    def __init__(self, path: Path, about: dict[str, Any]) -> None:
        self.path = path
        self.about = dict(about)
        self._lock_fd: int | None = None
        self.last_seq = 0

    def open(self) -> int:
        """Take the lock and return the sequence number already on disk (0 if none)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise BadInputError(f"cannot use state file {self.path}: {exc.strerror}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            os.close(fd)
            raise UserError(f"state file {self.path} is in use by another monitor") from exc
        self._lock_fd = fd
        existing = read_transition(self.path)
        self.last_seq = existing.seq if existing else 0
        return self.last_seq

    def write(self, transition: Transition) -> bool:
        """Replace the file with ``transition``; False (nothing written) if it is not newer."""
        if transition.seq <= self.last_seq:
            return False
        document = {**transition.to_dict(), **self.about}
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(document, handle, sort_keys=True)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)
        self.last_seq = transition.seq
        return True

    def close(self) -> None:
        """Release the lock (the state file stays)."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
