"""``l3ha config sample|reference|show``: the daemon's configuration. I/O: reads files, stdout."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from typing import Any

from l3ha.cli.common import command_group


def sample(_args: argparse.Namespace) -> int:
    """Handler of ``l3ha config sample``."""
    from l3ha.daemon.settings import sample_config

    sys.stdout.write(sample_config())
    return 0


def reference(_args: argparse.Namespace) -> int:
    """Handler of ``l3ha config reference``: the configuration page, in Markdown."""
    from l3ha.cli.config_reference import reference_markdown
    from l3ha.cli.main import build_parser

    sys.stdout.write(reference_markdown(build_parser()))
    return 0


def show(args: argparse.Namespace) -> int:
    """Handler of ``l3ha config show``."""
    from l3ha.daemon.leader import display_url
    from l3ha.daemon.settings import load_settings

    settings = load_settings(args)
    for name, value in asdict(settings).items():
        shown = "" if value is None else str(value)
        if name == "coordination":
            shown = display_url(shown)
        if name == "config_files":
            shown = ", ".join(value) or "(none)"
        sys.stdout.write(f"{name} = {shown}".rstrip() + "\n")
    return 0


def register(subparsers: Any) -> None:
    """Add ``l3ha config sample`` and ``l3ha config show``."""
    from l3ha.daemon.settings import add_watch_arguments

    group = command_group(subparsers, "config", "the configuration file of 'l3ha watch'")
    commands = (
        (
            sample,
            "print a sample l3ha.conf with every option, its help and its default",
            "Print the documented sample configuration, generated from the option "
            "definitions (the same as etc/l3ha.conf.sample). Install it as "
            "/etc/l3ha/l3ha.conf and uncomment what you change.",
        ),
        (
            reference,
            "print the configuration reference (docs/configuration.md) in Markdown",
            "Print every option with its type, default, help and the flags of the same "
            "name, generated from the option definitions and the commands' arguments.",
        ),
        (
            show,
            "print the settings 'l3ha watch' would run with (files and flags applied)",
            "Read /etc/l3ha/l3ha.conf (if it exists) and every --config-file, apply the "
            "flags, check every value, and print the resulting settings; exit 2 on an "
            "unknown option or a bad value. Credentials are not shown.",
        ),
    )
    for handler, help_text, description in commands:
        parser = group.add_parser(handler.__name__, help=help_text, description=description)
        if handler is show:
            add_watch_arguments(parser)
        parser.set_defaults(func=handler)
