"""``l3ha snapshot save FILE``: the cloud as observed, for offline planning. I/O: cloud, a file."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from l3ha.cli.common import add_cloud_options, command_group, open_cloud
from l3ha.snapshotfile import save_snapshot


def save(args: argparse.Namespace) -> int:
    """Handler of ``l3ha snapshot save``."""
    snapshot = open_cloud(args).read_snapshot(with_ha_state=True)
    save_snapshot(snapshot, args.file)
    sys.stderr.write(
        f"saved {len(snapshot.agents)} agents, {len(snapshot.routers)} routers, "
        f"{len(snapshot.bindings)} bindings observed at {snapshot.observed_at} to {args.file}\n"
    )
    return 0


def register(subparsers: Any) -> None:
    """Add ``l3ha snapshot save``."""
    group = command_group(subparsers, "snapshot", "save the cloud's agents and routers to a file")
    parser = group.add_parser(
        "save",
        help="write agents, routers, bindings and tags to a versioned JSON file",
        description=(
            "Read every L3 agent, router (with tags) and binding (with HA state) and write "
            "them, with the observation time, to FILE as versioned JSON (atomically). "
            "Planning commands take --snapshot FILE to work offline from it."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="where to write the snapshot")
    add_cloud_options(parser, weights=False)
    parser.set_defaults(func=save)
