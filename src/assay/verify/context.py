"""What a predicate evaluator sees: a snapshot of the final state, never the live workspace."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable

from assay.sandbox.base import Sandbox
from assay.spec.load import LoadedTask
from assay.trace.events import TraceEvent


class PathEscape(Exception):
    """A path (or a symlink on it) points out of the snapshot: never followed."""


@dataclass(frozen=True)
class Outcome:
    """An evaluator's verdict and the evidence it read."""

    passed: bool
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass
class VerifyContext:
    """The verifier's view of one attempt.

    ``work`` is a copy of the final workspace in a fresh directory, ``hidden`` a copy of the
    task's hidden files made only now, ``code`` a copy of the task's verifier code.
    """

    task: LoadedTask
    root: Path
    work: Path
    hidden: Path
    code: Path
    initial_digests: dict[str, str]
    final_digests: dict[str, str]
    events: list[TraceEvent]
    sandbox_factory: Callable[[], Awaitable[Sandbox]]
    extra: dict[str, Any] = field(default_factory=dict)  # world states, approvals, ... from plugins
    _sandbox: Sandbox | None = None

    async def sandbox(self) -> Sandbox:
        """The verifier's own sandbox over ``root`` (created on first use)."""
        if self._sandbox is None:
            self._sandbox = await self.sandbox_factory()
        return self._sandbox

    def resolve(self, rel: str, *, base: Path | None = None) -> Path:
        """``base/rel`` if it stays inside ``base`` after resolving every symlink; else PathEscape."""
        base = (base or self.work).resolve()
        candidate = base / rel
        real = Path(os.path.realpath(candidate))
        if real != base and not real.is_relative_to(base):
            raise PathEscape(f"{rel!r} resolves to {real}, outside the snapshot")
        return candidate

    def read_bytes(self, rel: str, limit: int = 16 << 20) -> bytes:
        p = self.resolve(rel)
        with open(p, "rb") as f:
            return f.read(limit)

    def read_text(self, rel: str) -> str:
        return self.read_bytes(rel).decode("utf-8", errors="replace")


def excerpt(text: str, n: int = 500) -> str:
    """A bounded piece of what was read, for the evidence record."""
    return text if len(text) <= n else text[:n] + f"... [{len(text) - n} more chars]"
