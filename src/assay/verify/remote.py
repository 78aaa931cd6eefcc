"""Verification on a node of its own: the request an attempt sends and the side that answers it.

On a cluster with verifier nodes (``assay k8s render`` gives them a ServiceAccount of their own),
the attempt's node ships the final workspace (:mod:`.shipped`) with what the verifier reads
besides it (the initial digests, the trace events as the harness recorded them, the services'
verifier data) and waits for the report; the hidden files enter only the verifier's node. The
verifier there is the very same :func:`~assay.verify.verifier.run_verifier`.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Awaitable, Callable

from assay.errors import VerifierError
from assay.records.verifier_inputs import VerifierInputs
from assay.sandbox.base import SandboxBackend
from assay.spec.budget import Limits
from assay.spec.load import LoadedSuite
from assay.trace.events import TraceEvent
from assay.verify.shipped import ShippedTree, ShippedTreeError, unpack_tree
from assay.verify.verifier import VerifierReport, run_verifier


@dataclass(frozen=True)
class VerifyRequest:
    """Everything a verifier elsewhere needs of one attempt, as data."""

    trial_id: str
    attempt: int
    task_id: str
    tree: ShippedTree
    initial_digests: dict[str, str]
    events: tuple[TraceEvent, ...]
    limits: Limits
    extra: VerifierInputs = field(default_factory=VerifierInputs)


#: what an attempt calls to have its final state verified elsewhere: the report, and the node that made it
RemoteVerify = Callable[[VerifyRequest], Awaitable[tuple[VerifierReport, str]]]


class VerifierNode:
    """Answers :class:`VerifyRequest`s on this node, in folders of its own, removed after each."""

    def __init__(self, suite: LoadedSuite, backend: SandboxBackend, node_id: str, *, root: Path | None = None):
        self.suite, self.backend, self.node_id = suite, backend, node_id
        self.root = root or Path(tempfile.mkdtemp(prefix="assay-verifier-"))
        self.root.mkdir(parents=True, exist_ok=True)

    async def verify(self, req: VerifyRequest, *, max_bytes: int) -> VerifierReport:
        task = self.suite.task(req.task_id)
        here = Path(tempfile.mkdtemp(prefix=f"{req.trial_id[:40]}.{req.attempt}-", dir=self.root))
        try:
            try:
                skipped = unpack_tree(req.tree, here / "final", max_bytes=max_bytes)
            except (ShippedTreeError, OSError) as e:
                raise VerifierError(f"the shipped final workspace could not be taken: {e}",
                                    reason="verifier_transfer") from e
            report = await run_verifier(task, here / "final", here / "verify", initial_digests=req.initial_digests,
                                        events=list(req.events), backend=self.backend, limits=req.limits,
                                        extra=req.extra, known_skipped=tuple(skipped))
            return report
        finally:
            shutil.rmtree(here, ignore_errors=True)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
