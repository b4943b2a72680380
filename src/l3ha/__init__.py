"""l3ha: keeps Neutron routers reachable through L3 agent failures. Pure (package marker)."""

__version__ = "0.1.0"
