"""Building the run manifest: every fact that shaped the results, gathered before the run."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import assay
from assay.agents.base import AgentInfo
from assay.run import hostload
from assay.run.installed_build import installed_record
from assay.records.manifest import AgentRecord, GatewayRecord, PlanRecord, RunManifest, SandboxRecord, TaskRecord
from assay.spec.digest import sha256_bytes, sha256_file
from assay.spec.environment import EnvironmentRecord
from assay.spec.load import LoadedSuite

SCORE_VERSION = "1"
DEFAULT_CAPABILITY_WEIGHTS = {"completion": 0.60, "tool_trajectory": 0.15, "reliability_recovery": 0.15,
                              "evidence_operability": 0.10}


def _git_out(args: list[str], cwd: Path) -> tuple[int, str] | None:
    """(exit status, standard output) of one git command (None: git could not run)."""
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.returncode, out.stdout


def _git(args: list[str], cwd: Path) -> str | None:
    got = _git_out(args, cwd)
    return got[1] if got is not None and got[0] == 0 else None


def repo_facts(path: Path) -> dict[str, Any]:
    """Commit of the git repository holding ``path`` and digests of its uncommitted files there.

    A folder that repository ignores (assay installed into a project's ``.venv``, a suite generated
    under ``build/``) is in none of its commits: no commit is recorded for it, only where it lies."""
    got = _git_out(["rev-parse", "--show-toplevel", "HEAD"], path)  # one process for both
    lines = got[1].splitlines() if got is not None else []
    if not lines:  # no repository (git prints the top first, even when HEAD has no commit yet)
        return {"git": None}
    top_path = Path(lines[0].strip())
    if _git(["check-ignore", "-q", "."], path) is not None:
        return {"git": None, "ignored_in": str(top_path)}
    assert got is not None  # the lines came from it
    commit = lines[1].strip() if got[0] == 0 and len(lines) > 1 else None
    status = _git(["status", "--porcelain", "--untracked-files=all", "--", "."], path) or ""
    dirty: dict[str, str] = {}
    for line in status.splitlines():
        rel = line[3:].strip().strip('"')
        if " -> " in rel:
            rel = rel.split(" -> ", 1)[1]
        p = top_path / rel
        dirty[rel] = sha256_file(p) if p.is_file() else "deleted"
    return {"git": str(top_path), "commit": commit, "dirty": dirty}


def harness_facts() -> dict[str, Any]:
    """The harness that ran: its version, and its commit with the digest of each of its files that
    differ from it (as the suite's are recorded), or without a commit (installed from a wheel) the
    digest of the install's list of its files (run/installed_build.py)."""
    src = Path(assay.__file__).resolve().parent
    facts = repo_facts(src)
    dirty = facts.get("dirty") or {}
    out = {"name": "assay", "version": assay.__version__, "commit": facts.get("commit"),
           "dirty_files": len(dirty), "dirty": dirty, "python": sys.version.split()[0],
           "platform": platform.platform()}
    if facts.get("commit") is None and (record := installed_record(src)) is not None:
        out["installed_record_sha256"] = record
    return out


def host_facts() -> dict[str, Any]:
    """The machine, and the CPUs this run may use (its affinity: a run pinned to one core of 64
    says so; the performance runner's figure, run/hostload.cpus)."""
    mem = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    return {"os": platform.system(), "kernel": platform.release(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "cpus_usable": hostload.cpus(), "memory_bytes": mem,
            "hostname_sha256": sha256_bytes(platform.node().encode())[:16]}


def _workdir(spec: Any, env: EnvironmentRecord | None) -> str:
    """Where the task's sandboxes saw the workspace: its own workdir when it sets one, else the
    image's WORKDIR, else the default (as ``sandbox.outer.workspace_target`` decides)."""
    if "workdir" not in spec.model_fields_set and env is not None and env.workdir:
        return env.workdir
    return spec.workdir


def _source_digest(extra: dict[str, Any]) -> str | None:
    src = extra.get("source")
    digest = src.get("digest") if isinstance(src, dict) else None
    return digest if isinstance(digest, str) else None


def where_facts(suite: LoadedSuite) -> dict[str, Any]:
    """What a manifest records of where the run ran: the harness's and the suite's commits (git
    runs here), the host. Taken apart from :func:`build_manifest` so a run can take them while its
    sandbox probe still runs (run/runner.py)."""
    return {"harness": harness_facts(), "host": host_facts(), "suite_repo": repo_facts(suite.root)}


def build_manifest(*, run_id: str, suite: LoadedSuite, agents: list[AgentInfo], sandbox: SandboxRecord,
                   gateway: GatewayRecord, plan: PlanRecord, track: str = "controlled",
                   capability_weights: dict[str, float] | None = None, extra: dict[str, Any] | None = None,
                   judge: GatewayRecord | None = None,
                   environments: dict[str, EnvironmentRecord] | None = None,
                   verifier_environments: dict[str, EnvironmentRecord] | None = None,
                   where: dict[str, Any] | None = None) -> RunManifest:
    """The run's manifest; ``where``: :func:`where_facts`, taken now when not given."""
    where = where or where_facts(suite)
    tasks = [
        TaskRecord(id=t.id, category=t.spec.category, version=t.spec.version, digest=t.digest, files=t.file_digests,
                   prompt_sha256=sha256_bytes(t.prompt.encode()), budget=t.spec.budget, risk=t.spec.risk.value,
                   tools=list(t.spec.tools), variants=t.spec.variant_ids(), held_out=t.spec.held_out,
                   simulated_user=t.spec.conversation is not None and t.spec.conversation.simulator is not None,
                   environment=(environments or {}).get(t.id),
                   verifier_environment=(verifier_environments or {}).get(t.id),
                   workdir=_workdir(t.spec, (environments or {}).get(t.id)), network=t.spec.network.value if t.spec.network else None,
                   deviations=list(t.spec.deviations), source_digest=_source_digest(t.spec.extra),
                   metadata=t.spec.metadata)
        for t in suite.tasks
    ]
    return RunManifest(
        run_id=run_id, created_at=time.time(), harness=where["harness"], host=where["host"],
        suite={"name": suite.spec.name, "version": suite.spec.version, "path": str(suite.root.resolve()),
               "digest": suite.digest, "suite_file_sha256": suite.suite_file_digest, **where["suite_repo"]},
        categories=suite.spec.weights(), tasks=tasks,
        agents=[AgentRecord(name=a.name, kind=a.kind, version=a.version, config=a.config, track=track) for a in agents],
        sandbox=sandbox, gateway=gateway, judge=judge, plan=plan, track=track,
        score={"version": SCORE_VERSION, "capability_weights": capability_weights or DEFAULT_CAPABILITY_WEIGHTS},
        extra=extra or {},
    )
