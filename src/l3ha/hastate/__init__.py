"""HA router state: the API-side audit/repair and the ordered VIP state monitor.

Modules: ``vipstate`` (pure state machine, hook coalescing, sequence filter),
``netlink`` (address events), ``statefile``, ``server``, ``hooks``,
``consumer`` and ``monitor`` (the process that wires them together).
"""
