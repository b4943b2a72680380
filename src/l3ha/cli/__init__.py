"""Thin command-line commands over the l3ha core. Each module registers its own subcommands."""
