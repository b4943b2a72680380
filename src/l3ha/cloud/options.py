"""The ``openstack`` client's cloud options, registered by openstacksdk's own argparse support.
I/O: reads the ``OS_*`` variables and clouds.yaml (for the options' defaults and to see which
auth type's options to offer), opens SDK connections.

``cloud_option_actions`` gives the options ``openstack`` itself takes (``--os-cloud``,
``--os-auth-url``, ``--os-username``, ``--os-password``, ``--os-project-name``,
``--os-region-name``, ``--os-interface``, ``--os-cacert``, ``--insecure``, ``--timeout``
...) as argparse actions made by ``OpenStackConfig.register_argparse_arguments``; they are
registered once per environment and command line, as the ``openstack`` client does (it
too peeks at ``--os-cloud``/``--os-auth-type`` to choose the auth options it offers).
``sdk_arguments`` picks their values out of a command's parsed arguments and
``sdk_connect`` hands them to ``OpenStackConfig.get_one``.

``--os-cloud``, ``--os-cacert``, ``--insecure`` and ``--timeout`` l3ha passes itself (it
checks the CA file and warns about ``--insecure``), so their defaults are unset here:
openstacksdk still reads ``OS_CLOUD``, and ``--timeout`` given wins over ``--api-timeout``.
A command with an option of the same name of its own (``l3ha probe --timeout``) keeps it.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Sequence
from typing import Any

#: Where ``--timeout`` lands (apart from commands' own ``--timeout``, such as ``l3ha probe``'s).
TIMEOUT_DEST = "os_timeout"
#: Options l3ha passes to openstacksdk itself (see the module docstring).
OWN_DESTS = frozenset({"os_cloud", "os_cacert", "insecure", TIMEOUT_DEST})


def cloud_option_actions(argv: Sequence[str] | None = None) -> tuple[argparse.Action, ...]:
    """The ``openstack`` client's cloud options for a command line (default: this process's)."""
    line = tuple(sys.argv[1:] if argv is None else argv)
    environment = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("OS_")))
    return _registered(line, environment)


@functools.lru_cache(maxsize=8)
def _registered(argv: tuple[str, ...], _environment: object) -> tuple[argparse.Action, ...]:
    from openstack.config.loader import OpenStackConfig

    parser = argparse.ArgumentParser(add_help=False)
    try:
        OpenStackConfig().register_argparse_arguments(parser, list(argv))
    except Exception:
        # An unknown cloud, auth type or unreadable clouds.yaml: offer the default (password)
        # options; connecting names the problem in one line.
        parser = argparse.ArgumentParser(add_help=False)
        config = OpenStackConfig(load_yaml_config=False, load_envvars=False)
        config.register_argparse_arguments(parser, [])
    for action in parser._actions:
        if action.dest == "timeout":
            action.dest = TIMEOUT_DEST
        if action.dest in OWN_DESTS:
            action.default = None
    return tuple(parser._actions)


def sdk_arguments(args: argparse.Namespace) -> argparse.Namespace:
    """The values of the ``openstack`` options l3ha does not pass itself, as given."""
    dests = {a.dest for a in cloud_option_actions()} - OWN_DESTS
    return argparse.Namespace(**{d: getattr(args, d) for d in sorted(dests) if hasattr(args, d)})


def sdk_connect(cloud: str | None, arguments: argparse.Namespace | None, **options: Any) -> Any:
    """An SDK connection to ``cloud`` with ``options``, and the ``openstack`` options given."""
    import openstack

    if arguments is None:
        return openstack.connect(cloud=cloud, **options)
    from openstack.config.loader import OpenStackConfig

    region = OpenStackConfig().get_one(cloud=cloud, argparse=arguments, **options)
    return openstack.connection.Connection(config=region)
