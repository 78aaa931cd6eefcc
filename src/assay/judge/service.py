"""The judge as a harness service: a gateway of its own for the run's ``--judge-model``.

One keyed gateway session for the whole run, with its own key and call budget, recorded apart
from every agent's. Attempts of tasks that have a ``judge`` predicate get the connection for
their verifier (``verifier_extra["judge"]``); the key never reaches an agent's sandbox.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from assay.gateway.service import GatewayService
from assay.harness.services import AttemptHandle, HarnessService, ServiceSession, SessionReport
from assay.spec.budget import Budget
from assay.spec.manifest import GatewayRecord, RunManifest

#: the judge's call budget for a whole run unless the record says otherwise
DEFAULT_MAX_CALLS = 10_000


@dataclass(frozen=True)
class JudgeConnection:
    """How the verifier reaches the judge model. Its text form never shows the key."""

    url: str
    key: str = field(repr=False)
    model: str
    backend: str | None

    def __str__(self) -> str:
        return f"judge {self.model} ({self.backend}) at {self.url}"


class _JudgeSession(ServiceSession):
    def __init__(self, conn: JudgeConnection):
        self.conn = conn
        self.endpoints = []  # nothing of the judge is reachable from the agent's sandbox
        self.env = {}

    async def close(self) -> SessionReport:
        return SessionReport(verifier_extra={"judge": self.conn})


class JudgeService(HarnessService):
    name = "judge"

    def __init__(self, record: GatewayRecord):
        self.record = record
        self.gateway = GatewayService(record)
        self.conn: JudgeConnection | None = None

    async def start(self) -> None:
        await self.gateway.start()
        sess = await asyncio.to_thread(self.gateway.open_session, None)
        sess.budget = Budget(model_calls=int(self.record.settings.get("max_calls", DEFAULT_MAX_CALLS)))
        self.conn = JudgeConnection(self.gateway.server.url, sess.key, sess.model, self.record.backend)

    async def stop(self) -> None:
        await self.gateway.stop()

    def secrets(self) -> dict[str, str]:
        return {"judge_key": self.conn.key} if self.conn else {}

    def manifest_record(self) -> dict[str, Any]:
        return {"backend": self.record.backend, "model": self.record.model, "settings": self.record.settings}

    async def open(self, handle: AttemptHandle) -> ServiceSession | None:
        if self.conn is None or not any(p.kind == "judge" for p in handle.task.spec.predicates):
            return None
        return _JudgeSession(self.conn)


def service_from_manifest(manifest: RunManifest) -> HarnessService | None:
    """The run's judge, or None when the run has no ``--judge-model``."""
    return JudgeService(manifest.judge) if manifest.judge is not None else None
