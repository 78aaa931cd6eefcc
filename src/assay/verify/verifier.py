"""The verifier (law 2): runs after the agent's processes are gone, over the final workspace
(read in place once the agent's isolated sandbox is destroyed and nothing can write it, else a
copy in a fresh directory), with hidden files copied into a fresh directory only then.

Layout of the verifier's directory (never writable by any process the verifier starts)::

    work/      only when the state is not frozen: copy of the final workspace (symlinks copied
               as links, never followed)
    hidden/    copy of the task's hidden tests and expected values
    code/      copy of the task's verifier plugin code
    events.jsonl   the attempt's trace, for trajectory predicates
    exec/NNN/  one per code-executing predicate: ``ws`` a fresh copy of the snapshot (the
               sandbox's only writable place, seen at the task's ``workdir`` as the agent saw
               its workspace) and read-only material mounted beside it

Phases: state predicates first, over the snapshot; then each code-executing predicate in its
own sandbox (:mod:`assay.verify.site`). See docs/security.md.

A verifier that crashes or times out raises :class:`VerifierError`: the attempt becomes
``infra_error``, never ``pass``.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from assay.errors import VerifierError
from assay.records.incident import incident
from assay.records.results import PredicateResult
from assay.records.results import Trust
from assay.records.verifier_inputs import VerifierInputs
from assay.sandbox.base import CleanupReport, SandboxBackend
from assay.spec.budget import Limits
from assay.spec.digest import UNREADABLE, text_name, tree_digests, workspace_hash_budget
from assay.spec.load import LoadedTask
from assay.trace.events import TraceEvent
from assay.untrusted import bounded_re
from assay.verify.context import PathEscape, VerifyContext
from assay.verify.registry import registered
from assay.verify.site import close_site, leftover_incident
from assay.verify.snapshot import copy_snapshot


#: called after each verification, while its directory still exists (e.g. the mutation tester
#: keeps the oracle's end state): ``(root, task, initial_digests, extra, events, report, work=)``
#: (``work``: the final state it read, ``root/work`` or the frozen workspace itself)
OBSERVERS: list[Callable[..., None]] = []


@dataclass(frozen=True)
class VerifierReport:
    predicates: list[PredicateResult]
    final_digests: dict[str, str]
    skipped_entries: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    cpu_s: float | None = None  # CPU seconds of the verifier's sandbox, when one ran and it measures

    @property
    def held(self) -> bool:
        """Every required predicate held, and at least one of them on evidence the agent did not
        write itself: agent-reported verdicts are never alone a pass."""
        required = [p for p in self.predicates if p.required]
        return all(p.passed for p in required) and any(p.trust is not Trust.agent_reported for p in required)

    @property
    def diagnostic_score(self) -> float:
        return diagnostic_score(self.predicates)

    @property
    def incidents(self) -> list[dict[str, Any]]:
        """Incidents the predicates raised (tampering, leftover processes, security)."""
        return [i for p in self.predicates for i in p.evidence.get("incidents", [])]


def diagnostic_score(results: list[PredicateResult]) -> float:
    """0-100: the weighted share of predicates that held."""
    total = sum(p.weight for p in results)
    if total <= 0:
        return 100.0 if all(p.passed for p in results) else 0.0
    return round(100.0 * sum(p.weight for p in results if p.passed) / total, 4)


async def run_verifier(
    task: LoadedTask,
    final_workspace: Path,
    root: Path,
    *,
    initial_digests: dict[str, str],
    events: list[TraceEvent],
    backend: SandboxBackend,
    limits: Limits | None = None,
    extra: VerifierInputs | None = None,
    final_digests: dict[str, str] | None = None,
    known_skipped: tuple[str, ...] = (),
) -> VerifierReport:
    """Verify one attempt. ``root`` must not exist yet: the verifier always starts fresh.

    ``final_digests``: the final workspace's digests from the one walk the harness made of it,
    given only once nothing can write it any more (the agent's isolated sandbox is destroyed):
    the verifier then reads it in place, no copy and no second walk. Without them it is copied
    to ``root/work`` and walked, as for a state that is not frozen. ``known_skipped``: entries
    already found unreadable where the state was taken (a workspace shipped from another node)."""
    start = time.monotonic()
    if root.exists():
        raise VerifierError(f"verifier directory {root} already exists", reason="verifier_setup")
    root.mkdir(parents=True)
    work = final_workspace if final_digests is not None else root / "work"
    skipped = [] if final_digests is not None else copy_snapshot(final_workspace, work)
    skipped += [s for s in known_skipped if s not in skipped]
    hidden_src = task.dir / task.spec.hidden
    (root / "hidden").mkdir()
    if hidden_src.is_dir():
        shutil.copytree(hidden_src, root / "hidden", dirs_exist_ok=True, symlinks=True)
    (root / "code").mkdir()
    code_src = task.dir / task.spec.verify_dir
    if code_src.is_dir():
        shutil.copytree(code_src, root / "code", dirs_exist_ok=True, symlinks=True)
    with open(root / "events.jsonl", "w") as f:
        for ev in events:
            f.write(ev.model_dump_json() + "\n")
    if final_digests is None:
        budget = workspace_hash_budget((limits or Limits()).disk_mb)  # claimed sizes cost the agent nothing
        final_digests = tree_digests(work, budget=budget)
        for rel in skipped:  # what could not be copied still exists: unknown, never "unchanged"
            final_digests.setdefault(text_name(rel), UNREADABLE)
    else:
        skipped = [k for k, v in final_digests.items() if v == UNREADABLE]
    final_digests = dict(sorted(final_digests.items()))
    ctx = VerifyContext(task=task, root=root, work=work, hidden=root / "hidden", code=root / "code",
                        initial_digests=initial_digests, final_digests=final_digests, events=events,
                        backend=backend, limits=limits or Limits(), extra=extra or VerifierInputs())
    try:
        results = await asyncio.wait_for(_evaluate_all(task, ctx), timeout=task.spec.verifier_timeout_s)
    except asyncio.TimeoutError:
        raise VerifierError(f"verifier exceeded {task.spec.verifier_timeout_s}s", reason="verifier_timeout") from None
    finally:
        await _close_sites(ctx)
    report = VerifierReport(results, final_digests, skipped, time.monotonic() - start, ctx.cpu_s)
    for observe in OBSERVERS:
        observe(root, task, initial_digests, extra or VerifierInputs(), events, report, work=work)
    return report


async def _close_sites(ctx: VerifyContext, predicate: str = "") -> tuple[list[CleanupReport], list[dict[str, Any]]]:
    """Destroy the predicate's sandboxes; report leftovers and hidden values copied into its copy."""
    reports, incidents = [], []
    while ctx.sites:
        site = ctx.sites.pop()
        try:
            rep = await site.sandbox.destroy()
            if rep.cpu_s is not None:  # CPU seconds of every predicate's sandbox, added up
                ctx.cpu_s = (ctx.cpu_s or 0.0) + rep.cpu_s
            saw_hidden = "hidden" in site.mounts  # only then could its code copy a hidden file
            work = tree_digests(site.host_dir / "ws", budget=workspace_hash_budget(ctx.limits.disk_mb)) \
                if saw_hidden else {}
        finally:
            await close_site(site)
        reports.append(rep)
        if not rep.clean:
            incidents.append(leftover_incident(predicate, rep))
        hidden = {d: rel for rel, d in tree_digests(ctx.hidden).items() if not d.startswith("symlink:")} if work else {}
        copied = {rel: hidden[d] for rel, d in work.items() if d in hidden and ctx.final_digests.get(rel) != d}
        if copied:
            incidents.append(incident("verifier_hidden_copied", "critical",
                                      f"hidden files were copied into the workspace while {predicate!r} ran",
                                      predicate=predicate, copies=dict(list(copied.items())[:10])))
    return reports, incidents


async def _evaluate_all(task: LoadedTask, ctx: VerifyContext) -> list[PredicateResult]:
    """Phase 1: every state predicate, over the snapshot, before any agent-written code runs.
    Phase 2: each code-executing predicate in its own sandbox. Results keep the task's order."""
    specs = list(task.spec.predicates)
    state = [s for s in specs if not registered(s.kind).executes_code]  # type: ignore[attr-defined]
    code = [s for s in specs if registered(s.kind).executes_code]  # type: ignore[attr-defined]
    done: dict[str, PredicateResult] = {}
    for spec in state + code:
        done[spec.id] = await _evaluate_one(spec, ctx)
    return [done[s.id] for s in specs]


async def _evaluate_one(spec: Any, ctx: VerifyContext) -> PredicateResult:
    t0 = time.monotonic()
    reg = registered(spec.kind)
    try:
        try:
            outcome = await reg.fn(spec, ctx)
            passed, evidence, error = outcome.passed, dict(outcome.evidence), None
            trust, recorded_by = outcome.trust or reg.trust, list(outcome.recorded_by) or _recorders(reg.trust)
        finally:
            cleanups, found = await _close_sites(ctx, spec.id)
    except PathEscape as e:
        passed, evidence, error = False, {"escape": str(e)}, None
        trust, recorded_by = reg.trust, _recorders(reg.trust)
    except bounded_re.MatchTimeout:  # a pattern over what the agent wrote ran too long: unknown is failure
        passed, evidence, error = False, bounded_re.timed_out(), None
        trust, recorded_by = reg.trust, _recorders(reg.trust)
    except VerifierError:
        raise
    except Exception as e:  # noqa: BLE001 - any crash of verifier code is an infra error
        raise VerifierError(f"predicate {spec.id!r} crashed: {type(e).__name__}: {e}", reason="verifier_crash") from e
    else:
        if found:  # a process outliving its predicate, or hidden values smuggled out: never a pass
            passed = False
            left = [cmd for c in cleanups for cmd in c.leftover_commands]
            if left:
                evidence["leftover_processes"] = left[:10]
            evidence["incidents"] = [*evidence.get("incidents", []), *found]
    return PredicateResult(id=spec.id, kind=spec.kind, required=spec.required, weight=spec.weight, passed=passed,
                           evidence=evidence, error=error, duration_s=round(time.monotonic() - t0, 6), trust=trust,
                           recorded_by=recorded_by)


def _recorders(trust: Trust) -> list[str]:
    """Who recorded the inputs of a kind that does not say: the snapshot for state and code
    predicates (they read the copy of the final state), the harness for its records."""
    if trust is Trust.recorded:
        return ["harness"]
    if trust in (Trust.agent_reported, Trust.model_judged):  # the judge reads what the agent wrote
        return ["agent"]
    return ["snapshot"]
