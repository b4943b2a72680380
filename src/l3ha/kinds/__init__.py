"""The kinds of placement the executor's one dispatcher runs. Package only (no I/O here).

``base``: the ``Kind`` protocol; ``router``: routers on L3 agents; ``dhcp``:
networks on DHCP agents.
"""
