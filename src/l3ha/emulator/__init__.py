"""A stateful Neutron API emulator with simulated L3 agents, data plane and faults.

``Emulator(EmulatorConfig(...)).start()`` serves the Neutron v2.0 subset that
l3ha, openstacksdk and python-openstackclient use. It shares no code with
``l3ha.cloud`` on purpose, so that bugs of the adapter and the emulator
cannot agree; a contract suite holds both against a real Neutron API server.
"""

from l3ha.emulator.config import EmulatorConfig
from l3ha.emulator.faults import FaultError
from l3ha.emulator.server import CLOUD_NAME, Emulator

__all__ = ["CLOUD_NAME", "Emulator", "EmulatorConfig", "FaultError"]
