"""The model-driven user of a conversation task, as a harness service.

The simulator is the user, never the agent: it has a gateway of its own for the run (its own
server, key and call budget per attempt), its calls are recorded in its own file and reported
under ``extra["simulator"]``, never in the agent's usage or trace accounting, and nothing of it
is reachable from the agent's sandbox. Under the scripted backend it speaks the task's
``conversation.simulator.script``; under a real backend the run's model plays the persona.
The judge's service (:mod:`assay.judge.service`) is the same shape: a gateway of the harness's
own, opened from the harness side.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from assay.conversations.script import UserLine
from assay.errors import GatewayError
from assay.gateway.service import GatewayService
from assay.gateway.session import GatewaySession
from assay.harness.budget import BudgetMeter
from assay.harness.services import AttemptHandle, HarnessService, ServiceSession, SessionReport
from assay.records.manifest import RunManifest
from assay.spec.budget import Budget

#: what the simulator says when its user has nothing more to say (the conversation reached its goal)
DONE = "[DONE]"
SYSTEM = ("You play the USER in a conversation with an assistant. {persona}\n"
          "Write only the user's next message, in the user's voice. When the user has what they wanted, "
          f"or has nothing more to say, answer exactly {DONE}")


class SimulatorError(GatewayError):
    """The simulator's own gateway failed (not the agent's doing): the attempt is an infra error."""

    def __init__(self, message: str):
        super().__init__(message, reason="simulator_error")


class SimulatorSession(ServiceSession):
    """One attempt's simulated user: speaks through the run's simulator gateway."""

    def __init__(self, service: "SimulatorService", sess: GatewaySession, persona: str):
        self.service, self.sess, self.persona = service, sess, persona
        self.endpoints = []  # nothing of the simulator is reachable from the agent's sandbox
        self.env = {}
        self.lines = 0

    async def next_line(self, transcript: list[dict[str, str]]) -> UserLine:
        """The user's next message given the conversation so far (the agent's turns as what the
        simulator was told): ``end="budget"`` when its calls are spent, ``"goal"`` when it is done."""
        messages = [{"role": "system", "content": SYSTEM.format(persona=self.persona)}]
        messages += [{"role": "assistant" if m["role"] == "user" else "user", "content": m["content"]}
                     for m in transcript]
        import httpx  # only where a simulated user speaks: every run imports this module

        url = self.service.gateway.server.url.rstrip("/") + "/v1/chat/completions"
        async with httpx.AsyncClient(timeout=120, trust_env=False) as client:
            try:
                resp = await client.post(url, json={"model": self.sess.model, "messages": messages},
                                         headers={"Authorization": f"Bearer {self.sess.key}"})
            except httpx.HTTPError as e:
                raise SimulatorError(f"the simulator's gateway failed: {type(e).__name__}: {e}") from e
        if resp.status_code == 400 and "budget_exceeded" in resp.text:
            return UserLine(None, "simulator", end="budget")
        try:
            resp.raise_for_status()
            text = str(resp.json()["choices"][0]["message"].get("content") or "").strip()
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as e:
            raise SimulatorError(f"the simulator's model answered {resp.status_code}: {resp.text[:300]}") from e
        self.lines += 1
        if not text or text == DONE:
            return UserLine(None, "simulator", end="goal")
        return UserLine(text, "simulator")

    async def close(self) -> SessionReport:
        rep = await asyncio.to_thread(self.service.gateway.close_session, self.sess)
        usage = rep.usage.model_dump() if rep.usage is not None else {}
        files = {f"simulator.{name}": path for name, path in rep.files.items()}
        # usage stays out of SessionReport.usage: the agent's figures never include the simulator's
        return SessionReport(files=files, extra={"simulator": {"model": self.sess.model, "lines": self.lines,
                                                               "budget_exceeded": rep.budget_exceeded, **usage}})


class SimulatorService(HarnessService):
    name = "simulator"

    def __init__(self, manifest: RunManifest):
        self.gateway = GatewayService(manifest.gateway)

    async def start(self) -> None:
        await self.gateway.start()

    async def stop(self) -> None:
        await self.gateway.stop()

    def secrets(self) -> dict[str, str]:
        return {f"simulator_{k}": v for k, v in self.gateway.secrets().items()}

    def manifest_record(self) -> dict[str, Any]:
        return {"gateway": self.gateway.manifest_record(), "use": "the model-driven user of conversation tasks"}

    async def open(self, handle: AttemptHandle) -> ServiceSession | None:
        conv = handle.task.spec.conversation
        if conv is None or conv.simulator is None:
            return None
        sim = conv.simulator
        task = dataclasses.replace(handle.task, spec=handle.task.spec.model_copy(update={"model_script": sim.script}))
        budget = Budget(model_calls=sim.max_calls)
        own = dataclasses.replace(handle, task=task, budget=budget, meter=BudgetMeter(budget), world_tools=None,
                                  trace=None, attempt_dir=handle.attempt_dir / "simulator")  # type: ignore[arg-type]
        own.attempt_dir.mkdir(parents=True, exist_ok=True)
        return SimulatorSession(self, await asyncio.to_thread(self.gateway.open_session, own), sim.persona)


def service_from_manifest(manifest: RunManifest) -> HarnessService | None:
    """The simulator's gateway when the run has a model and its suite a model-driven user."""
    if manifest.gateway.backend is None:
        return None
    if not any(t.simulated_user for t in manifest.tasks):
        return None
    return SimulatorService(manifest)
