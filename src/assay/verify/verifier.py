"""The verifier (law 2): runs after the agent's processes are gone, over a copy of the final
workspace in a fresh directory, into which hidden files are copied only then.

Layout of the verifier's directory (its own sandbox's workspace)::

    work/      copy of the final workspace (symlinks copied as links, never followed)
    hidden/    copy of the task's hidden tests and expected values
    code/      copy of the task's verifier plugin code
    events.jsonl   the attempt's trace, for trajectory predicates
    out/       reports written by checks (JUnit XML, ...)

A verifier that crashes or times out raises :class:`VerifierError`: the attempt becomes
``infra_error``, never ``pass``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import VerifierError
from assay.sandbox.base import Sandbox, SandboxBackend, SandboxSpec
from assay.spec.budget import Limits, NetworkProfile
from assay.spec.digest import tree_digests
from assay.spec.load import LoadedTask
from assay.spec.results import PredicateResult
from assay.trace.events import TraceEvent
from assay.verify.context import PathEscape, VerifyContext
from assay.verify.registry import get_evaluator


@dataclass(frozen=True)
class VerifierReport:
    predicates: list[PredicateResult]
    final_digests: dict[str, str]
    skipped_entries: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    cpu_s: float | None = None  # CPU seconds of the verifier's sandbox, when one ran and it measures

    @property
    def held(self) -> bool:
        """Every required predicate held."""
        return all(p.passed for p in self.predicates if p.required)

    @property
    def diagnostic_score(self) -> float:
        return diagnostic_score(self.predicates)


def diagnostic_score(results: list[PredicateResult]) -> float:
    """0-100: the weighted share of predicates that held."""
    total = sum(p.weight for p in results)
    if total <= 0:
        return 100.0 if all(p.passed for p in results) else 0.0
    return round(100.0 * sum(p.weight for p in results if p.passed) / total, 4)


def copy_snapshot(src: Path, dst: Path) -> list[str]:
    """Copy regular files, folders and symlinks (as links); skip FIFOs, sockets and devices.

    Returns the relative paths that were skipped. Nothing is ever followed through a link,
    so a link pointing out of the workspace stays a dangling-or-outside link in the copy.
    """
    skipped: list[str] = []
    dst.mkdir(parents=True, exist_ok=True)
    if not src.exists():
        return skipped
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        base = Path(dirpath)
        rel_dir = base.relative_to(src)
        target_dir = dst / rel_dir
        target_dir.mkdir(parents=True, exist_ok=True)
        for name in list(dirnames):
            p = base / name
            if p.is_symlink():
                os.symlink(os.readlink(p), target_dir / name)
                dirnames.remove(name)
        for name in filenames:
            p = base / name
            rel = (rel_dir / name).as_posix()
            try:
                st = p.lstat()
            except OSError:
                skipped.append(rel)
                continue
            if stat.S_ISLNK(st.st_mode):
                os.symlink(os.readlink(p), target_dir / name)
            elif stat.S_ISREG(st.st_mode):
                try:
                    shutil.copyfile(p, target_dir / name, follow_symlinks=False)
                except OSError:
                    skipped.append(rel)
            else:
                skipped.append(rel)
    return skipped


async def run_verifier(
    task: LoadedTask,
    final_workspace: Path,
    root: Path,
    *,
    initial_digests: dict[str, str],
    events: list[TraceEvent],
    backend: SandboxBackend,
    limits: Limits | None = None,
    extra: dict[str, Any] | None = None,
) -> VerifierReport:
    """Verify one attempt. ``root`` must not exist yet: the verifier always starts fresh."""
    start = time.monotonic()
    if root.exists():
        raise VerifierError(f"verifier directory {root} already exists", reason="verifier_setup")
    root.mkdir(parents=True)
    skipped = copy_snapshot(final_workspace, root / "work")
    hidden_src = task.dir / task.spec.hidden
    (root / "hidden").mkdir()
    if hidden_src.is_dir():
        shutil.copytree(hidden_src, root / "hidden", dirs_exist_ok=True, symlinks=True)
    (root / "code").mkdir()
    code_src = task.dir / task.spec.verify_dir
    if code_src.is_dir():
        shutil.copytree(code_src, root / "code", dirs_exist_ok=True, symlinks=True)
    (root / "out").mkdir()
    with open(root / "events.jsonl", "w") as f:
        for ev in events:
            f.write(ev.model_dump_json() + "\n")
    final_digests = tree_digests(root / "work")

    async def make_sandbox() -> Sandbox:
        return await backend.create(SandboxSpec(workspace=root, network=NetworkProfile.none, identity="verifier",
                                                limits=limits or Limits(), label=f"verify:{task.id}"))

    ctx = VerifyContext(task=task, root=root, work=root / "work", hidden=root / "hidden", code=root / "code",
                        initial_digests=initial_digests, final_digests=final_digests, events=events,
                        sandbox_factory=make_sandbox, extra=dict(extra or {}))
    cpu_s = None
    try:
        results = await asyncio.wait_for(_evaluate_all(task, ctx), timeout=task.spec.verifier_timeout_s)
    except asyncio.TimeoutError:
        raise VerifierError(f"verifier exceeded {task.spec.verifier_timeout_s}s", reason="verifier_timeout") from None
    finally:
        if ctx._sandbox is not None:
            cpu_s = (await ctx._sandbox.destroy()).cpu_s
    return VerifierReport(results, final_digests, skipped, time.monotonic() - start, cpu_s)


async def _evaluate_all(task: LoadedTask, ctx: VerifyContext) -> list[PredicateResult]:
    results = []
    for spec in task.spec.predicates:
        t0 = time.monotonic()
        try:
            evaluate = get_evaluator(spec.kind)  # type: ignore[attr-defined]
            outcome = await evaluate(spec, ctx)
            passed, evidence, error = outcome.passed, outcome.evidence, None
        except PathEscape as e:
            passed, evidence, error = False, {"escape": str(e)}, None
        except VerifierError:
            raise
        except Exception as e:  # noqa: BLE001 - any crash of verifier code is an infra error
            raise VerifierError(f"predicate {spec.id!r} crashed: {type(e).__name__}: {e}", reason="verifier_crash") from e
        results.append(PredicateResult(id=spec.id, kind=spec.kind, required=spec.required,  # type: ignore[attr-defined]
                                       weight=spec.weight, passed=passed, evidence=evidence, error=error,
                                       duration_s=round(time.monotonic() - t0, 6)))
    return results
