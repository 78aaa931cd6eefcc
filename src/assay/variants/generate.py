"""Derive a variant set from tasks and rules: a runnable suite of the base tasks and one task per
(task, rule), with the rule, its digest and the expected behaviour bound to every variant.

Output layout (a normal suite, so ``assay run`` and ``assay validate`` take it as it is)::

    OUT/suite.yaml                  the base suite's categories, name ``<suite>-variants``
    OUT/tasks/<task>/               the base task, its hand-written variants removed
    OUT/tasks/<task>--<rule>/       one derived task per rule that applied
    OUT/variants.json               the set: rule, rule digest, expected behaviour and task
                                    digest of every variant, and the (task, rule) pairs skipped

Each variant is its own task (own digest) rather than an in-task ``variants:`` entry because a
rule may change what is expected (``clarify`` once the hint is gone), and an in-task variant
shares its base's verifier.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from assay.errors import UsageError
from assay.spec.digest import sha256_bytes, tree_digest, tree_digests
from assay.spec.load import SUITE_FILE, TASK_FILE, LoadedTask, load_suite, load_task
from assay.untrusted.yaml_doc import load_yaml
from assay.variants.rules import ExpectChange, RuleSet, Swap, VariantRule
from assay.variants.transforms import apply_step

SET_FILE = "variants.json"
SET_SCHEMA_VERSION = 1
#: predicate kinds a restraint variant keeps from its base (security never loosens)
KEEP_KINDS = ("security", "no_secret_leak")


@dataclass(frozen=True)
class VariantRecord:
    task_id: str
    base_task: str
    rule: str
    rule_digest: str
    expect: str | dict[str, Any]
    prompt_sha256: str
    digest: str = ""


@dataclass
class VariantSet:
    suite: str
    base_suite_version: str
    bases: dict[str, dict[str, str]] = field(default_factory=dict)  # task -> {source_digest, digest}
    variants: list[VariantRecord] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"schema_version": SET_SCHEMA_VERSION, "suite": self.suite, "base_suite_version": self.base_suite_version,
                "bases": self.bases, "variants": [asdict(v) for v in self.variants], "skipped": self.skipped}


def read_set(path: Path) -> VariantSet:
    """Read ``variants.json`` (or the folder holding it)."""
    p = path / SET_FILE if path.is_dir() else path
    try:
        data = json.loads(p.read_text())
        return VariantSet(suite=data["suite"], base_suite_version=data["base_suite_version"], bases=data["bases"],
                          variants=[VariantRecord(**v) for v in data["variants"]], skipped=data.get("skipped", []))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UsageError(f"{p}: not a variant set ({e}); pass the variants.json `assay variants generate` wrote") from None


def _replace_deep(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [_replace_deep(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _replace_deep(v, old, new) for k, v in value.items()}
    return value


def _sh_json(value: dict[str, Any]) -> str:
    return "'" + json.dumps(value, ensure_ascii=False).replace("'", "'\\''") + "'"


def _restraint(raw: dict[str, Any], expect: ExpectChange) -> tuple[dict[str, Any], str]:
    """Turn a task into a case that must ask or refuse and change nothing; returns (raw, solution)."""
    tool = "user.ask_clarification" if expect.behaviour == "clarify" else "user.refuse"
    text_key = "question" if expect.behaviour == "clarify" else "message"
    text = expect.question or ("Which category should this entry use?" if expect.behaviour == "clarify"
                               else "I cannot do this.")
    kept = [p for p in raw.get("predicates", []) if isinstance(p, dict) and p.get("kind") in KEEP_KINDS]
    raw["behaviour"] = {"expect": expect.behaviour, "reason_code": expect.reason_code}
    if expect.category:
        raw["category"] = expect.category
    raw["predicates"] = [
        {"id": "behaviour", "kind": "behaviour"},
        {"id": "worlds-untouched", "kind": "world_unchanged"},
        {"id": "reason-code", "kind": "tool_called", "tool": tool, "args": {"reason_code": expect.reason_code}},
        *kept,
    ]
    solution = f'#!/bin/sh\nset -eu\n"$ASSAY_TOOL" {tool} --json {_sh_json({text_key: text, "reason_code": expect.reason_code})}\n'
    return raw, solution


def derive(task: LoadedTask, rule: VariantRule) -> tuple[dict[str, Any], str, str | None] | str:
    """(task.yaml data, prompt, new solution or None), or why the rule does not apply to this task.

    Every step must change the prompt: a rule that changed nothing would make a variant that
    measures nothing, so it is skipped with the step named.
    """
    prompt = task.prompt
    for i, step in enumerate(rule.steps):
        after = apply_step(prompt, step)
        if after == prompt:
            kind = next(iter(step.model_dump(by_alias=True)))
            return f"step {i + 1} ({kind}) changed nothing in the prompt"
        prompt = after
    raw = load_yaml((task.dir / TASK_FILE).read_text()) or {}
    raw.pop("variants", None)
    raw["id"] = f"{task.id}--{rule.id}"
    solution: str | None = None
    sol_rel = task.spec.solution
    sol_path = task.dir / sol_rel if sol_rel else None
    for step in rule.steps:
        if isinstance(step, Swap):
            for key in ("behaviour", "predicates"):
                if key in raw:
                    raw[key] = _replace_deep(raw[key], step.swap.from_, step.swap.to)
            if sol_path is not None and sol_path.is_file():
                solution = (solution or sol_path.read_text()).replace(step.swap.from_, step.swap.to)
    if isinstance(rule.expect, ExpectChange):
        raw, solution = _restraint(raw, rule.expect)
    raw["description"] = f"Variant of {task.id} by rule {rule.id}. " + str(raw.get("description", "")).strip()
    raw["extra"] = {**(raw.get("extra") or {}), "variant_of": task.id, "rule": rule.id, "rule_digest": rule.digest()}
    return raw, prompt, solution


def _suite_dir(task_dir: Path) -> Path:
    root = task_dir.resolve().parent.parent
    if not (root / SUITE_FILE).is_file():
        raise UsageError(f"{task_dir}: not inside a suite (no {SUITE_FILE} two folders up); pass TASK as SUITE/tasks/ID")
    return root


def _write_task(src: LoadedTask, dest: Path, raw: dict[str, Any], prompt: str, solution: str | None) -> None:
    shutil.copytree(src.dir, dest, symlinks=True)
    (dest / TASK_FILE).write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True))
    (dest / src.spec.prompt_file).write_text(prompt)
    if solution is not None and src.spec.solution:
        (dest / src.spec.solution).parent.mkdir(parents=True, exist_ok=True)
        (dest / src.spec.solution).write_text(solution)


def generate(task_dirs: list[Path], rules: RuleSet, out: Path) -> VariantSet:
    """Write the variant set for ``task_dirs`` under ``out`` (which must not exist or be empty).

    Everything is checked and built in a temporary folder first: bad input writes nothing.
    """
    if not task_dirs:
        raise UsageError("give at least one task folder")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out} exists and is not empty; choose a new --out")
    roots = {_suite_dir(d) for d in task_dirs}
    if len(roots) != 1:
        raise UsageError(f"the tasks come from {len(roots)} suites; generate one suite's variants at a time")
    root = roots.pop()
    suite = load_suite(root)
    tasks = [load_task(d.resolve(), suite=suite.spec) for d in task_dirs]
    unknown = rules.unknown_tasks({x.id for x in tasks})
    if unknown is not None:
        raise unknown
    vset = VariantSet(suite=suite.spec.name, base_suite_version=suite.spec.version)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".variants-") as tmp:
        stage = Path(tmp) / "set"
        (stage / "tasks").mkdir(parents=True)
        data = load_yaml((root / SUITE_FILE).read_text())
        data.pop("tasks", None)
        used = {t.spec.category for t in tasks}  # a category without tasks is a suite error
        data["categories"] = [c for c in data.get("categories") or [] if c.get("id") in used]
        data["name"] = f"{suite.spec.name}-variants"[:64]
        data["description"] = (f"Counterfactual variants of suite {suite.spec.name} {suite.spec.version}, generated "
                               f"by `assay variants generate`; see {SET_FILE}.")
        (stage / SUITE_FILE).write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
        for t in tasks:
            raw = load_yaml((t.dir / TASK_FILE).read_text()) or {}
            raw.pop("variants", None)
            _write_task(t, stage / "tasks" / t.id, raw, t.prompt, None)
            vset.bases[t.id] = {"source_digest": t.digest}
            for rule in rules.rules:
                if not rule.applies_to(t.id):
                    continue
                made = derive(t, rule)
                if isinstance(made, str):
                    vset.skipped.append({"task": t.id, "rule": rule.id, "why": made})
                    continue
                raw_v, prompt, solution = made
                _write_task(t, stage / "tasks" / raw_v["id"], raw_v, prompt, solution)
                expect = rule.expect if isinstance(rule.expect, str) else rule.expect.model_dump()
                vset.variants.append(VariantRecord(raw_v["id"], t.id, rule.id, rule.digest(), expect,
                                                   sha256_bytes(prompt.encode())))
        loaded = load_suite(stage)  # every derived task must load, or nothing is written
        digests = {lt.id: tree_digest(tree_digests(lt.dir)) for lt in loaded.tasks}
        for tid in vset.bases:
            vset.bases[tid]["digest"] = digests[tid]
        vset.variants = [VariantRecord(**{**asdict(v), "digest": digests[v.task_id]}) for v in vset.variants]
        (stage / SET_FILE).write_text(json.dumps(vset.to_json(), indent=1, ensure_ascii=False) + "\n")
        if out.exists():
            out.rmdir()
        stage.rename(out)
    return vset
