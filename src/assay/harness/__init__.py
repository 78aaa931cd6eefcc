"""The attempt-facing contract: the bottom layer every service and agent builds on.

The run engine (``assay.run``) drives attempts through it; the gateway, the worlds and the
agents only see this package, never the engine. See ``docs/architecture.md``.
"""

from assay.harness.services import AttemptHandle, HarnessService, ServiceSession, SessionReport
from assay.harness.wiring import GatewayWiring, ToolsWiring, Wiring, WorldToolContract

__all__ = ["AttemptHandle", "GatewayWiring", "HarnessService", "ServiceSession", "SessionReport", "ToolsWiring",
           "Wiring", "WorldToolContract"]
