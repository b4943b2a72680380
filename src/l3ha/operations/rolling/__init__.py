"""Rolling maintenance: drain, upgrade and restore network nodes one at a time. Package only.

``run_rolling`` (``flow``) is the whole operation and ``session`` what goes
around it (the checks before a run or a resume, the probe, its report);
``plan`` the request and its steps (pure), ``report`` how a run ended
(pure), ``stability`` the judgement of a restarted agent (pure),
``participants`` the agents of a host it drains and restores (one participant
for every kind, with the kind's side: ``l3_participant`` the L3 agent, through
the operations layer; ``dhcp_participant`` the DHCP agent, through the DHCP
operations layer; ``gateway_participant`` an OVN gateway chassis, through the
gateway operations), ``command`` the maintenance command,
``guard`` the probe of tenant traffic, ``record`` the rolling journal.
"""

from l3ha.operations.rolling.participants import Participant, RunContext
from l3ha.operations.rolling.plan import (
    Phase,
    RollingRequest,
    StepKey,
    UpgradeStep,
    command_argv,
)
from l3ha.operations.rolling.record import RollingRecord
from l3ha.operations.rolling.report import HostSummary, RollingReport

__all__ = [
    "HostSummary",
    "Participant",
    "Phase",
    "RollingRecord",
    "RollingReport",
    "RollingRequest",
    "RunContext",
    "StepKey",
    "UpgradeStep",
    "command_argv",
]
