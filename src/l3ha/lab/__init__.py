"""A real data plane for HA routers: keepalived VRRP in network namespaces (``l3ha lab``).

``topology`` (pure: names, addresses, keepalived.conf), ``netns`` (ip commands,
processes) and ``lab`` (up/status/fail/recover/down with a state dir).
"""
