"""A worker node's side of a campaign: it runs attempts and returns them as data.

One :class:`NodeWorker` per sandbox node (a Ray actor; plain Python here). It runs the very
same attempt code as a local run (:func:`assay.run.attempt.trial.run_attempt`: the phases, then the
result built by the seal) against a *staging* run directory of its own under the node's temp
folder, never the campaign's. What the attempt produced is then read back and handed to the
head as a :class:`FinishedAttempt`: the result, the attempt's trace events, its artifacts by
digest and the files it kept in its trial folder. The head is the only writer of the run
directory; the staging folder is removed before the worker answers.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from assay.errors import RunDirError
from assay.harness.wiring import WorldToolContract
from assay.records.manifest import RunManifest
from assay.records.results import AttemptResult
from assay.run.attempt.trial import RunContext, new_trace, run_attempt
from assay.run.cluster.hub import HubCall, HubProxy
from assay.run.parts import agent_refs, resolve_agents
from assay.run.plan import parse_trial_id
from assay.sandbox.registry import get_backend
from assay.spec.digest import sha256_bytes
from assay.run.controls_run import suite_of_run
from assay.store.rundir import ARTIFACTS, RunDir, trial_files
from assay.trace.events import TraceEvent
from assay.verify.remote import RemoteVerify

#: files of a staging trial folder that the head makes itself: the trace, and the attempt's
#: started marker and result (relative to the trial folder; ``{n}`` is the attempt)
HEAD_MADE = ("trace.jsonl", "attempts/{n}/started.json", "attempts/{n}/result.json")


@dataclass(frozen=True)
class FinishedAttempt:
    """One attempt as a worker hands it to the head: data only."""

    result: AttemptResult
    events: tuple[TraceEvent, ...]
    artifacts: dict[str, bytes]  # sha256 -> bytes
    files: dict[str, bytes]  # path relative to the trial folder -> bytes
    node_id: str


class NodeWorker:
    """Runs attempts of one campaign on this node; writes only under its own temp folder."""

    def __init__(self, manifest_json: str, hub_call: HubCall, services: list[str],
                 contracts: dict[str, list[WorldToolContract | None]], node_id: str, *, root: Path | None = None,
                 remote_verify: RemoteVerify | None = None):
        manifest = RunManifest.model_validate_json(manifest_json)
        suite = suite_of_run(manifest)
        if suite.digest != manifest.suite["digest"]:
            raise RunDirError(f"node {node_id[:12]}: the suite at {manifest.suite['path']} is not the one of the run "
                              f"(digest {suite.digest[:12]} != {manifest.suite['digest'][:12]}); give every node the same suite")
        adapters, infos = resolve_agents(agent_refs(manifest))
        for rec, info in zip(manifest.agents, infos):
            if rec.version != info.version:
                raise RunDirError(f"node {node_id[:12]}: agent {rec.name!r} is version {info.version} here, "
                                  f"the run uses {rec.version}")
        self.node_id = node_id
        self.root = root or Path(tempfile.mkdtemp(prefix="assay-node-"))
        proxies = [HubProxy(hub_call, i, name, contracts) for i, name in enumerate(services)]
        self.ctx = RunContext(run_id=manifest.run_id, run_dir=RunDir(self.root / "staging"), suite=suite,
                              agents=adapters, backend=get_backend(manifest.sandbox.backend),
                              scratch_root=self.root / "scratch", network=manifest.sandbox.network,
                              limits=manifest.sandbox.limits, services=list(proxies), model=manifest.gateway.model,
                              track=manifest.track, remote_verify=remote_verify)

    def facts(self) -> dict[str, Any]:
        return {"node_id": self.node_id, "root": str(self.root)}

    def close(self) -> None:
        """The campaign is over: this node's staging and scratch folders go."""
        shutil.rmtree(self.root, ignore_errors=True)

    async def run(self, trial_id: str, attempt: int, retry_reason: str | None) -> FinishedAttempt:
        """Run one attempt in a fresh staging folder and return it as data."""
        trial = parse_trial_id(trial_id)
        stage = RunDir(self.root / "staging" / f"{trial_id}.{attempt}")
        ctx = replace(self.ctx, run_dir=stage)
        try:
            trace = new_trace(ctx, trial)
            result = await run_attempt(ctx, trial, attempt, retry_reason=retry_reason, trace=trace)
            result = result.model_copy(update={"sandbox": {**result.sandbox, "node_id": self.node_id}})
            return FinishedAttempt(result=result, events=tuple(trace.events()), artifacts=_artifacts(stage),
                                   files=_trial_files(stage, trial_id, attempt), node_id=self.node_id)
        finally:
            shutil.rmtree(stage.path, ignore_errors=True)


def _artifacts(stage: RunDir) -> dict[str, bytes]:
    out = {}
    for p in sorted((stage.path / ARTIFACTS).rglob("*")):
        if p.is_file() and not p.is_symlink() and not p.name.startswith(".tmp-"):
            data = p.read_bytes()
            out[sha256_bytes(data)] = data
    return out


def _trial_files(stage: RunDir, trial_id: str, attempt: int) -> dict[str, bytes]:
    tdir = stage.trial_dir(trial_id)
    skip = {rel.format(n=attempt) for rel in HEAD_MADE}
    files = ((p.relative_to(tdir).as_posix(), p) for p in trial_files(tdir))
    return {rel: p.read_bytes() for rel, p in files if rel not in skip}
