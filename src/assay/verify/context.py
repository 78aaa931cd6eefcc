"""What a predicate evaluator sees: a snapshot of the final state, never the live workspace."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.environments.runtime import verifier_files_at_workdir, verifier_root
from assay.records.results import Trust
from assay.sandbox.base import SandboxBackend
from assay.spec.budget import Limits
from assay.spec.load import LoadedTask
from assay.trace.events import TraceEvent
from assay.verify.site import open_site
from assay.records.verifier_inputs import VerifierInputs
from assay.untrusted.rooted import resolve_in


class PathEscape(Exception):
    """A path (or a symlink on it) points out of the snapshot: never followed."""


@dataclass(frozen=True)
class Outcome:
    """An evaluator's verdict and the evidence it read. ``trust`` overrides the kind's declared
    trust level for this verdict (e.g. ``agent_reported`` when only the agent's log could decide
    it); ``recorded_by`` names who recorded its inputs (harness, snapshot, agent)."""

    passed: bool
    evidence: dict[str, Any] = field(default_factory=dict)
    trust: Trust | None = None
    recorded_by: tuple[str, ...] = ()


@dataclass
class VerifyContext:
    """The verifier's view of one attempt.

    ``work`` is the final state state predicates read: the agent's workspace itself once nothing
    can write it (its isolated sandbox destroyed), else a copy in a fresh directory, ``hidden`` a copy of the task's hidden files made only now, ``code``
    a copy of the task's verifier code. Code-executing evaluators never touch these: they call
    :meth:`open_site` for a sandbox over a fresh copy of their own.
    """

    task: LoadedTask
    root: Path
    work: Path
    hidden: Path
    code: Path
    initial_digests: dict[str, str]
    final_digests: dict[str, str]
    events: list[TraceEvent]
    backend: SandboxBackend
    limits: Limits = field(default_factory=Limits)
    extra: VerifierInputs = field(default_factory=VerifierInputs)  # world states, approvals, judge: from the services
    sites: list[Any] = field(default_factory=list)  # ExecSites opened by the predicate being evaluated
    cpu_s: float | None = None  # CPU seconds of the predicates' sandboxes so far (None: not measured)

    async def open_site(self, predicate: str, ro: dict[str, Path] | None = None,
                        inputs: dict[str, str] | None = None, snapshot: Path | None = None,
                        pinned: dict[str, Path] | None = None) -> Any:
        """A fresh sandbox over a fresh copy of the snapshot for one code-executing predicate,
        with ``ro`` (``hidden``/``code``/``events``/``input`` -> host path) mounted read-only.
        The verifier destroys it when the predicate ends and fails the predicate if anything was
        left running in it. ``snapshot``: a prepared copy to start from instead of the final state;
        ``pinned``: files bound read-only over the mounts (:func:`assay.verify.site.open_site`)."""
        n = len(list((self.root / "exec").glob("*"))) if (self.root / "exec").is_dir() else 0
        site = await open_site(self.backend, snapshot or self.work, self.root / "exec" / f"{n:03d}", limits=self.limits,
                               label=f"verify:{self.task.id}:{predicate}", ro=dict(ro or {}), inputs=inputs,
                               workdir=self.task.spec.workdir, env=self.task.spec.env.verifier,
                               image=(root := verifier_root(self.task)), keep=verifier_files_at_workdir(self.task, root),
                               pinned=pinned)
        self.sites.append(site)
        return site

    @property
    def python(self) -> str:
        """The interpreter code under test runs with: the image's own ``python3`` over an image,
        else the harness's."""
        return "python3" if self.task.spec.environment is not None else sys.executable

    def image_file(self, inside: str) -> Path | None:
        """A file of the verifier's image by its path inside (None: no image, or not a regular
        file there: a link is never followed out of the image)."""
        root = verifier_root(self.task)
        if root is None:
            return None
        p = resolve_in(root.rootfs, inside)  # links on the way resolved in the image, never on the host
        return p if p is not None and p.is_file() else None

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
