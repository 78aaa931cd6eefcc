"""The model backend interface and its registry.

A backend answers neutral requests; it never sees a wire format, an HTTP request, a key, a
budget or a fault (the gateway session handles those). ``open`` gives each attempt its own
backend session, so per-task state (a script, a recording) lives there.
"""

from __future__ import annotations

import abc
from typing import Any, Callable

from assay.errors import UsageError
from assay.gateway.neutral import ModelReply, ModelRequest
from assay.harness.services import AttemptHandle
from assay.spec.manifest import GatewayRecord


class BackendSession(abc.ABC):
    """One attempt's view of a backend."""

    @abc.abstractmethod
    async def complete(self, req: ModelRequest, call_no: int) -> ModelReply:
        """Answer one request (``call_no`` counts the attempt's model calls from 1).

        Raise :class:`assay.gateway.errors.WireError` for an answer the agent must see as an error.
        """

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

    @abc.abstractmethod
    def open(self, handle: AttemptHandle | None) -> BackendSession:
        """A session for one attempt (``handle`` is None for a standalone ``assay gateway serve``)."""


_BACKENDS: dict[str, Callable[[GatewayRecord], ModelBackend]] = {}
BUILTIN_MODULES = ("scripted", "replay", "upstream", "local")


def register_backend(name: str, factory: Callable[[GatewayRecord], ModelBackend]) -> None:
    _BACKENDS[name] = factory


_loaded = False


def _load() -> None:
    """Import the built-in backends and entry points once (a module imported directly registers early)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib
    from importlib.metadata import entry_points

    for mod in BUILTIN_MODULES:
        importlib.import_module(f"assay.gateway.backends.{mod}")
    for ep in entry_points(group="assay.gateway_backends"):
        register_backend(ep.name, ep.load())


def backend_names() -> list[str]:
    _load()
    return sorted(_BACKENDS)


def make_backend(record: GatewayRecord) -> ModelBackend:
    _load()
    if record.backend not in _BACKENDS:
        raise UsageError(f"unknown gateway backend {record.backend!r}; known: {', '.join(sorted(_BACKENDS))}")
    return _BACKENDS[record.backend](record)


def reply_facts(**facts: Any) -> dict[str, Any]:
    return {k: v for k, v in facts.items() if v is not None}
