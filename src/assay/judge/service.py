"""The judge as a harness service: a gateway of its own for the run's ``--judge-model``.

One keyed gateway session for the whole run, with its own key and call budget, recorded apart
from every agent's. Attempts of tasks that have a ``judge`` predicate get the connection for
their verifier (``verifier_extra.judge``); the key never reaches an agent's sandbox.

With a run budget (``--max-cost``/``--max-tokens``) the judge's calls are admitted and settled by
the run's meter like any agent's, so they count towards the limit and are refused once it is
reached (the judged attempt then ends ``infra_error`` / ``run_budget`` and is retried on resume).
They belong to no attempt: what the judge spent is recorded in the run's budget log
(:meth:`JudgeService.spend`, :func:`assay.run.budget_stop.record_stop`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from assay.gateway.service import GatewayService
from assay.gateway.session import GatewaySession
from assay.harness.services import AttemptHandle, HarnessService, ServiceSession, SessionReport
from assay.judge.uses import is_judged
from assay.records.manifest import GatewayRecord, RunManifest
from assay.records.results import UsageTotals
from assay.records.verifier_inputs import VerifierInputs
from assay.spec.budget import Budget

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
        return SessionReport(verifier_extra=VerifierInputs(judge=self.conn))


class JudgeService(HarnessService):
    name = "judge"

    def __init__(self, record: GatewayRecord):
        self.record = record
        self.gateway = GatewayService(record)
        self.conn: JudgeConnection | None = None
        self.session: GatewaySession | None = None

    async def start(self) -> None:
        await self.gateway.start()
        sess = await asyncio.to_thread(self.gateway.open_session, None)
        sess.budget = Budget(model_calls=int(self.record.settings.get("max_calls", DEFAULT_MAX_CALLS)))
        self.session = sess
        self.conn = JudgeConnection(self.gateway.server.url, sess.key, sess.model, self.record.backend)

    async def stop(self) -> None:
        await self.gateway.stop()

    def secrets(self) -> dict[str, str]:
        return {"judge_key": self.conn.key} if self.conn else {}

    def manifest_record(self) -> dict[str, Any]:
        return {"backend": self.record.backend, "model": self.record.model, "settings": self.record.settings}

    async def open(self, handle: AttemptHandle) -> ServiceSession | None:
        if self.conn is None or not is_judged(handle.task.spec):  # final or per-turn judge predicates
            return None
        run = handle.meter.run if handle.meter is not None else None
        if run is not None and self.session is not None and self.session.meter.run is None:
            self.session.meter.run = run  # before the first judge call: judge calls come from verifiers
        return _JudgeSession(self.conn)

    def spend(self) -> UsageTotals | None:
        """What the judge's calls spent since the service started (None: it never started)."""
        return self.session.tally.totals() if self.session is not None else None


def service_from_manifest(manifest: RunManifest) -> HarnessService | None:
    """The run's judge, or None when the run has no ``--judge-model``."""
    return JudgeService(manifest.judge) if manifest.judge is not None else None
