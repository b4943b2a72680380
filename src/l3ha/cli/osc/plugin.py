"""The ``openstack.cli.extension`` module of ``openstack l3ha ...`` (osc-lib's plugin
interface): it declares the API name and version and adds the version option. I/O: reads
``OS_L3HA_API_VERSION`` from the environment."""

from __future__ import annotations

import argparse
import os
from typing import Any

API_NAME = "l3ha"
API_VERSION_OPTION = "os_l3ha_api_version"
DEFAULT_API_VERSION = "1"
API_VERSIONS = ("1",)


def make_client(instance: Any) -> Any:
    """``client_manager.l3ha``: the ``openstack`` client's SDK connection (l3ha needs no other)."""
    return instance.sdk_connection


def build_option_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``--os-l3ha-api-version`` (only version 1 exists)."""
    parser.add_argument(
        "--os-l3ha-api-version",
        metavar="<l3ha-api-version>",
        default=os.environ.get("OS_L3HA_API_VERSION", DEFAULT_API_VERSION),
        help=f"l3ha command set version (default: env[OS_L3HA_API_VERSION] or "
        f"{DEFAULT_API_VERSION})",
    )
    return parser
