"""The kinds of placement (``base``: the protocol; ``router``, ``dhcp``, ``gateway``).

Package only.
"""
