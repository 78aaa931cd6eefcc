"""The model backend interface and its registry.

A backend answers neutral requests; it never sees a wire format, an HTTP request, a key, a
budget or a fault (the gateway session handles those). ``open`` gives each attempt its own
backend session, so per-task state (a script, a recording) lives there.
"""

from __future__ import annotations

import abc
from typing import Any, AsyncIterator, Callable

from assay.errors import UsageError
from assay.gateway.neutral import ModelReply, ModelRequest
from assay.gateway.stream import Delta, deltas_of
from assay.harness.services import AttemptHandle
from assay.records.manifest import GatewayRecord
from assay.registry import Registry
from assay.spec.load import LoadedSuite
from assay.trace.events import EventKind


class BackendSession(abc.ABC):
    """One attempt's view of a backend."""

    #: set by the gateway session: ``notify(kind, data)`` records backend facts (upstream retries)
    notify: Callable[[EventKind, dict[str, Any]], None] | None = None

    @abc.abstractmethod
    async def complete(self, req: ModelRequest, call_no: int) -> ModelReply:
        """Answer one request (``call_no`` counts the attempt's model calls from 1).

        Raise :class:`assay.gateway.errors.WireError` for an answer the agent must see as an error.
        """

    async def stream(self, req: ModelRequest, call_no: int) -> AsyncIterator[list[Delta]]:
        """Answer one request as batches of deltas, each batch what arrived at once (the agent
        gets one write per batch). The default streams the whole reply of :meth:`complete` as one
        batch; a backend that really streams (upstream) overrides it. Errors must be raised before
        the first batch, so they still reach the agent as an HTTP error."""
        reply = await self.complete(req, call_no)
        yield list(deltas_of(reply))

    async def close(self) -> None:
        """Release per-attempt resources."""


class ModelBackend(abc.ABC):
    """A kind of model behind the gateway, chosen per run in the manifest."""

    name: str = ""

    def __init__(self, record: GatewayRecord):
        self.record = record

    async def start(self) -> None:
        """Called once per run before the first session."""

    async def stop(self) -> None:
        """Called once per run after the last session."""

    def model_id(self) -> str:
        return self.record.model or self.name

    def provider_name(self) -> str:
        """Who answers the calls (OpenTelemetry's ``gen_ai.provider.name``): assay itself for the
        scripted, replayed and local backends; an upstream says which service it reaches."""
        return f"assay.{self.name}" if self.name else "assay"

    @classmethod
    def record_from_cli(cls, value: str, suite: LoadedSuite) -> GatewayRecord:
        """The run's gateway record for ``--model VALUE`` (``NAME[:ARG]``); a bad value is a usage
        error naming the fix. A backend that cannot be chosen from the command line says so."""
        raise UsageError(f"--model {value!r}: the {cls.name!r} gateway backend cannot be chosen with --model")

    @abc.abstractmethod
    def open(self, handle: AttemptHandle | None) -> BackendSession:
        """A session for one attempt (``handle`` is None for a standalone ``assay gateway serve``)."""


#: a model backend factory: the backend class (called with the run's gateway record)
BackendFactory = Callable[[GatewayRecord], ModelBackend]

MODEL_BACKENDS: Registry[BackendFactory] = Registry("gateway backend", "assay.gateway_backends", {
    "scripted": "assay.gateway.backends.scripted:ScriptedBackend",
    "replay": "assay.gateway.backends.replay:ReplayBackend",
    "upstream": "assay.gateway.backends.upstream:UpstreamBackend",
    "local": "assay.gateway.backends.local:LocalBackend",
})


def register_model_backend(name: str, factory: BackendFactory, *, replace: bool = False) -> BackendFactory:
    """Register a third-party model backend under ``name`` (chosen with ``--model NAME...``)."""
    return MODEL_BACKENDS.register(name, factory, replace=replace)


def backend_names() -> list[str]:
    return MODEL_BACKENDS.names()


def make_backend(record: GatewayRecord) -> ModelBackend:
    return MODEL_BACKENDS.get(record.backend or "")(record)


def reply_facts(**facts: Any) -> dict[str, Any]:
    return {k: v for k, v in facts.items() if v is not None}
