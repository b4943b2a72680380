"""Where the journals live and who may read them. I/O: creates the state dir and opens
SQLite files in it, chmods, signals 0.

The state directory is created mode 0700 and the database files are made
mode 0600; ``open_database`` opens one (WAL, synchronous=FULL: a committed
record survives a crash) for the router journal and the rolling journal alike;
``process_alive`` asks the kernel whether an operation's process still runs
(signal 0).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path

from l3ha.errors import BadInputError

DB_NAME = "journal.sqlite"
STATE_DIR_ENV = "L3HA_STATE_DIR"


def default_state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$L3HA_STATE_DIR``, else ``$XDG_STATE_HOME/l3ha``, else ``~/.local/state/l3ha``."""
    env = os.environ if environ is None else environ
    if env.get(STATE_DIR_ENV):
        return Path(env[STATE_DIR_ENV])
    if env.get("XDG_STATE_HOME"):
        return Path(env["XDG_STATE_HOME"]) / "l3ha"
    return Path.home() / ".local" / "state" / "l3ha"


def prepare_state_dir(state_dir: Path) -> None:
    try:
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(state_dir, 0o700)
    except OSError as exc:
        raise BadInputError(f"cannot use state dir {state_dir}: {exc.strerror}") from exc
    if not os.access(state_dir, os.W_OK | os.X_OK):
        raise BadInputError(f"cannot use state dir {state_dir}: not writable")


def restrict_files(state_dir: Path, name: str = DB_NAME) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        path = state_dir / (name + suffix)
        if path.exists():
            os.chmod(path, 0o600)


def open_database(state_dir: Path, name: str, schema: str, what: str) -> sqlite3.Connection:
    """The SQLite database ``name`` in the (prepared) state dir, its ``schema`` applied:
    shared between threads, autocommit, WAL, fsynced commits, files mode 0600.
    ``BadInputError`` naming ``what`` when it cannot be opened."""
    prepare_state_dir(state_dir)
    path = state_dir / name
    try:
        # Created 0600 first: SQLite gives its -wal and -shm files the same mode.
        os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
        os.chmod(path, 0o600)
        db = sqlite3.connect(path, timeout=30.0, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.executescript(schema)
    except (OSError, sqlite3.Error) as exc:
        raise BadInputError(f"cannot open {what} {path}: {exc}") from exc
    restrict_files(state_dir, name)
    return db


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
