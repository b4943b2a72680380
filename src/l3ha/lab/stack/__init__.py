"""A real cloud in a box: MariaDB, RabbitMQ, Neutron servers, Open vSwitch and real agents.

``l3ha lab stack up|down|fault`` drives it; see docs/realstack.md.
"""
