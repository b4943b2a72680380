"""l3ha: keeps Neutron routers reachable through L3 agent failures (the package marker)."""

__version__ = "0.1.0"
