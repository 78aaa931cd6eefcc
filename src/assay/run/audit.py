"""``assay audit``: a benchmark audit, mechanical. Every task's oracle and do-nothing runs and the
state mutants of the oracle's end state (:func:`validate_suite`, not a second engine), read with
what the import report says the task needs, give one label per task:

- ``no reference solution``: nothing to run as the oracle, so solvability is unknown;
- ``needs``: the oracle fails and the task needs what is not available here (named): what the
  import report could not map (the network at test time, a GPU), or a host its image's build
  could not reach (the build log's line, under the step that met it), or root: the oracle's verifier
  was refused a write outside the workspace (:mod:`assay.run.refused_writes`);
- ``unsolvable as shipped``: the oracle fails (its failing predicates shown);
- ``weak``: the do-nothing agent passes, a state mutant survives, or `assay lint` finds what the
  agent should not reach (an answer key, a grader it can rewrite) (shown);
- ``image does not build``: the task's image could not be built here (its file, line and build
  log named); nothing of it ran, and every other task is audited all the same;
- ``valid``: none of these.

``--keep valid`` writes the valid subset as a new suite version beside the audit."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from assay.environments.build_log import unreached
from assay.environments.runtime import build_each, verifier_root
from assay.environments.store import LOG, ImageStore
from assay.records.results import EndState
from assay.run.refused_writes import needs_root, refused_writes
from assay.run.validate import TaskVerdict, validate_suite
from assay.spec.load import LoadedTask, load_suite
from assay.untrusted.yaml_doc import load_yaml

LABELS = ("valid", "weak", "unsolvable as shipped", "needs", "no reference solution", "image does not build")
TABLE_HEADER = ("task", "label", "oracle", "nop", "mutants survived")
#: words in an import report's "could not map" line that name a missing feature (not a detail)
_NEEDS = ("network", "mcp", "gpu", "compose", "multi-container")


@dataclass
class TaskAudit:
    task_id: str
    label: str
    evidence: list[str] = field(default_factory=list)
    needs: list[str] = field(default_factory=list)
    oracle: str | None = None
    nop: str | None = None
    mutants_tried: int = 0
    mutants_survived: list[str] = field(default_factory=list)


@dataclass
class AuditReport:
    suite: str
    version: str
    tasks: list[TaskAudit]

    def counts(self) -> dict[str, int]:
        return {label: sum(t.label == label for t in self.tasks) for label in LABELS}

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "counts": self.counts()}, indent=2) + "\n"

    def table(self) -> list[list[str]]:
        """One row per task under :data:`TABLE_HEADER`: what every rendering of the audit shows."""
        return [[t.task_id, t.label, str(t.oracle), str(t.nop), f"{len(t.mutants_survived)}/{t.mutants_tried}"]
                for t in self.tasks]

    def details(self) -> list[tuple[str, list[str]]]:
        """Per task with evidence: its heading and its evidence lines (needs first)."""
        return [(f"{t.task_id}: {t.label}", [*(f"needs: {n}" for n in t.needs), *t.evidence])
                for t in self.tasks if t.evidence or t.needs]

    def summary(self) -> str:
        return ", ".join(f"{label}: {n}" for label, n in self.counts().items())

    def to_markdown(self) -> str:
        cell = lambda v: v.replace("|", "\\|").replace("\n", " ")  # noqa: E731
        out = [f"# Audit of {self.suite} {self.version}", "", self.summary(), "",
               "| " + " | ".join(TABLE_HEADER) + " |", "|" + "---|" * len(TABLE_HEADER)]
        out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in self.table()]
        for title, lines in self.details():
            out += ["", f"## {title}", *[f"- {e}" for e in lines]]
        return "\n".join(out) + "\n"


def needs_of(suite_dir: Path) -> dict[str, list[str]]:
    """What the suite's import report (if any) says each task needs and cannot have here."""
    path = suite_dir / "import-report.json"
    if not path.is_file():
        return {}
    doc = json.loads(path.read_text())
    return {t["id"]: [u for u in t.get("unmapped", []) if any(w in u.lower() for w in _NEEDS)]
            for t in doc.get("tasks", [])}


def label(v: TaskVerdict, has_solution: bool, needs: list[str], approximated: list[str] | None = None) -> TaskAudit:
    """One task variant's label from its validation verdict (order: the first that applies).
    ``approximated``: what assay reads differently from the task (its ``deviations``), shown
    beside an oracle's failure, which they may have caused rather than the task."""
    a = TaskAudit(v.task_id, "valid", oracle=v.oracle.end_state.value if v.oracle else None,
                  nop=v.nop.end_state.value if v.nop else None, mutants_tried=len(v.mutants),
                  mutants_survived=[m.mutant for m in v.survivors])
    oracle_ok = v.oracle is not None and v.oracle.end_state is EndState.passed
    if not has_solution:
        a.label = "no reference solution"
        a.evidence = ["the task ships no solution: whether it can be solved is unknown"]
    elif not oracle_ok:
        a.label = "needs" if needs else "unsolvable as shipped"
        a.needs = list(needs)
        a.evidence = [p for p in v.problems if p.startswith("oracle")]
        a.evidence += [f"approximated here, which may be the cause rather than the task: {d}"
                       for d in approximated or [] if d.removeprefix("could not map: ") not in needs]
    elif v.nop is not None and v.nop.end_state is EndState.passed or v.survivors or _lint_errors(v):
        a.label = "weak"
        a.evidence = [p for p in v.problems if p.startswith(("nop", "mutant", "lint"))]
    if a.label != "weak":  # what lint found stands beside whatever label the runs gave
        a.evidence += _lint_errors(v)
    unasked = sorted({m.file for m in v.unasked if m.file})
    if unasked:
        a.evidence.append("not counted: every mutant of " + ", ".join(unasked) + " passed, a file the reference "
                          "solution wrote that the prompt never names, while another output's mutant was caught")
    return a


def _lint_errors(v: TaskVerdict) -> list[str]:
    """`assay lint`'s errors on the task (an answer key or a grader within the agent's reach): a
    task an agent can pass without solving it is weak, whatever its runs showed."""
    return [p for p in v.problems if p.startswith("lint:")]


def audit_suite(suite_path: Path, *, sandbox: str | None = None, jobs: int = 1) -> AuditReport:
    """Validate every task (with mutants) and label it; a task whose image does not build here
    is labelled so, and the others are audited all the same."""
    suite = load_suite(suite_path)
    needs = needs_of(suite.root)
    has_solution = {t.id: t.spec.solution is not None and (t.dir / t.spec.solution).is_file() for t in suite.tasks}
    deviations = {t.id: list(t.spec.deviations) for t in suite.tasks}
    store = ImageStore()
    built = build_each(suite, store=store)  # a task without an environment builds nothing
    unbuilt = built.failed
    for tid, info in [*built.images.items(), *built.verifier.items()]:  # a build that could not fetch
        needs.setdefault(tid, []).extend(f"network at build time: {where} (what that step fetches is not in the "
                                         "image)" for where in unreached(store.path(info.digest) / LOG))
    runnable = [t.id for t in suite.tasks if t.id not in unbuilt]
    labelled: dict[str, TaskAudit] = {}
    if runnable:
        report = validate_suite(suite_path, sandbox=sandbox, jobs=jobs, mutants=True, tasks=runnable)
        workdirs = {t.id: _seen_at(t, store) for t in suite.tasks if t.id in runnable}
        for v in report.verdicts:
            if v.variant == "base" and (refused := refused_writes(v.oracle, workdirs.get(v.task_id))):
                needs.setdefault(v.task_id, []).append(needs_root(refused))
        labelled = {v.task_id: label(v, has_solution[v.task_id], needs.get(v.task_id, []), deviations[v.task_id])
                    for v in report.verdicts if v.variant == "base"}
    for tid, why in unbuilt.items():
        first, *tail = why.message.splitlines()
        labelled[tid] = TaskAudit(tid, "image does not build", evidence=[
            f"{why.file}: {why.field}: {first}", *(f"build log: {line.strip()}" for line in tail if line.strip())])
    return AuditReport(suite.spec.name, suite.spec.version, [labelled[t.id] for t in suite.tasks if t.id in labelled])


def _seen_at(task: LoadedTask, store: ImageStore) -> str | None:
    """Where the verifier sees the workspace: the image's WORKDIR unless the task names its own."""
    root = verifier_root(task, store)
    if root is not None and root.workdir:
        return root.workdir
    return task.spec.workdir


def keep(suite_path: Path, report: AuditReport, labels: set[str], out: Path) -> list[str]:
    """Copy the suite to ``out`` with only the tasks of ``labels``, as a new version."""
    kept = sorted(t.task_id for t in report.tasks if t.label in labels)
    if not kept:
        return []
    suite = load_suite(suite_path)
    shutil.copytree(suite.root, out, symlinks=True)
    doc = load_yaml((out / "suite.yaml").read_text())
    doc["tasks"] = kept
    doc["version"] = f"{doc['version']}+audited"
    used = {t.spec.category for t in suite.tasks if t.id in kept}
    doc["categories"] = [c for c in doc["categories"] if c["id"] in used]
    (out / "suite.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    (out / "audit.json").write_text(report.to_json())
    load_suite(out)  # what is written loads, or the error names it
    return kept
