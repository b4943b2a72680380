"""The kinds of placement (``base``: the protocol; ``router``; ``dhcp``). Package only."""
