"""Loading suites and tasks from disk, with errors that name the file, the field and the fix.

Loading never writes anything. Every problem in every file is collected before raising one
:class:`~assay.errors.SpecError`, so a user fixes a suite in one pass rather than one error
at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from assay.errors import SpecError, SpecProblem
from assay.spec.digest import sha256_bytes, tree_digest, tree_digests
from assay.spec.suite import SuiteSpec
from assay.spec.task import TaskSpec

SUITE_FILE = "suite.yaml"
TASK_FILE = "task.yaml"

_FIX_HINTS: dict[str, str] = {
    "missing": "add this field",
    "extra_forbidden": "remove this field or check its spelling",
    "union_tag_invalid": "use one of the predicate kinds listed by `assay schema task`",
    "union_tag_not_found": "add a 'kind' field naming the predicate type",
    "string_pattern_mismatch": "match the pattern shown",
    "int_parsing": "use a whole number",
    "float_parsing": "use a number",
    "bool_parsing": "use true or false",
    "list_type": "use a YAML list",
    "dict_type": "use a YAML mapping",
    "string_type": "use a string",
    "too_short": "add at least one entry",
    "greater_than": "use a larger value",
    "greater_than_equal": "use a larger value",
    "literal_error": "use one of the allowed values",
    "enum": "use one of the allowed values",
}


@dataclass(frozen=True)
class LoadedTask:
    """A task spec together with where it lives and what its files hash to."""

    spec: TaskSpec
    dir: Path
    prompt: str
    file_digests: dict[str, str]

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def digest(self) -> str:
        return tree_digest(self.file_digests)

    def prompt_for(self, variant_id: str) -> str:
        """The prompt the agent sees for one variant of this task."""
        if variant_id == "base":
            return self.prompt
        v = self.spec.variant(variant_id)
        if v is None:
            raise KeyError(f"task {self.id!r} has no variant {variant_id!r}")
        if v.prompt is not None:
            return v.prompt
        if v.prompt_file is not None:
            return (self.dir / v.prompt_file).read_text()
        return self.prompt

    def path(self, rel: str | None) -> Path | None:
        return None if rel is None else self.dir / rel


@dataclass(frozen=True)
class LoadedSuite:
    spec: SuiteSpec
    root: Path
    tasks: list[LoadedTask] = field(default_factory=list)

    @property
    def digest(self) -> str:
        return tree_digest({t.id: t.digest for t in self.tasks} | {SUITE_FILE: self.suite_file_digest})

    @property
    def suite_file_digest(self) -> str:
        return sha256_bytes((self.root / SUITE_FILE).read_bytes())

    def task(self, task_id: str) -> LoadedTask:
        for t in self.tasks:
            if t.id == task_id:
                return t
        raise KeyError(task_id)


def _problems_from_validation(file: Path, err: ValidationError) -> list[SpecProblem]:
    out = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) if e["loc"] else ""
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown field"
        fix = _FIX_HINTS.get(e["type"], "")
        ctx = e.get("ctx") or {}
        if e["type"] == "union_tag_invalid":
            fix = f"use one of: {ctx.get('expected_tags', '')}"
        elif e["type"] in ("literal_error", "enum") and "expected" in ctx:
            fix = f"use one of: {ctx['expected']}"
        out.append(SpecProblem(str(file), loc, msg, fix))
    return out


def _read_yaml(path: Path, problems: list[SpecProblem]) -> dict[str, Any] | None:
    if not path.is_file():
        problems.append(SpecProblem(str(path), "", "file not found", f"create {path.name}"))
        return None
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problems.append(SpecProblem(str(path), where, f"not valid YAML: {getattr(e, 'problem', e)}", "fix the YAML syntax"))
        return None
    except UnicodeDecodeError:
        problems.append(SpecProblem(str(path), "", "not UTF-8 text", "save the file as UTF-8"))
        return None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        problems.append(SpecProblem(str(path), "", "top level must be a mapping", "write 'key: value' pairs"))
        return None
    return data


def load_task(task_dir: Path, *, suite: SuiteSpec | None = None) -> LoadedTask:
    """Load one task folder; raises :class:`SpecError` listing every problem found."""
    problems: list[SpecProblem] = []
    task = _load_task(task_dir, suite, problems)
    if problems or task is None:
        raise SpecError(problems)
    return task


def _load_task(task_dir: Path, suite: SuiteSpec | None, problems: list[SpecProblem]) -> LoadedTask | None:
    file = task_dir / TASK_FILE
    data = _read_yaml(file, problems)
    if data is None:
        return None
    data.setdefault("id", task_dir.name)
    if suite is not None and suite.default_budget is not None:
        base = suite.default_budget.model_dump(exclude_unset=True)
        own = data.get("budget") or {}
        if isinstance(own, dict):
            data["budget"] = {**base, **own}
    before = len(problems)
    try:
        spec = TaskSpec.model_validate(data)
    except ValidationError as e:
        problems.extend(_problems_from_validation(file, e))
        return None
    if suite is not None:
        cats = {c.id for c in suite.categories}
        if spec.category not in cats:
            problems.append(
                SpecProblem(str(file), "category", f"category {spec.category!r} is not declared in suite.yaml",
                            f"use one of {sorted(cats)} or declare it under 'categories' in suite.yaml")
            )
    _check_paths(task_dir, spec, file, problems)
    if len(problems) > before:
        return None
    prompt = (task_dir / spec.prompt_file).read_text()
    if not prompt.strip():
        problems.append(SpecProblem(str(task_dir / spec.prompt_file), "", "prompt is empty", "write the instruction"))
        return None
    return LoadedTask(spec=spec, dir=task_dir, prompt=prompt, file_digests=tree_digests(task_dir))


def _check_paths(task_dir: Path, spec: TaskSpec, file: Path, problems: list[SpecProblem]) -> None:
    """Every file a task refers to must exist inside the task folder."""

    def need(field_name: str, rel: str | None, *, is_dir: bool = False, optional_dir: bool = False) -> None:
        if rel is None:
            return
        p = (task_dir / rel).resolve()
        if not p.is_relative_to(task_dir.resolve()):
            problems.append(SpecProblem(str(file), field_name, f"path {rel!r} leaves the task folder", "use a path inside the task folder"))
            return
        if optional_dir:
            if p.exists() and not p.is_dir():
                problems.append(SpecProblem(str(file), field_name, f"{rel!r} is not a folder", "make it a folder"))
            return
        ok = p.is_dir() if is_dir else p.is_file()
        if not ok:
            kind = "folder" if is_dir else "file"
            problems.append(SpecProblem(str(file), field_name, f"{kind} {rel!r} not found in {task_dir}", f"create it or change '{field_name}'"))

    need("prompt_file", spec.prompt_file)
    need("workspace", spec.workspace, optional_dir=True)
    need("hidden", spec.hidden, optional_dir=True)
    need("verify_dir", spec.verify_dir, optional_dir=True)
    need("setup", spec.setup)
    need("model_script", spec.model_script)
    if "solution" in spec.model_fields_set:
        need("solution", spec.solution)
    for i, v in enumerate(spec.variants):
        if v.prompt_file is not None:
            need(f"variants.{i}.prompt_file", v.prompt_file)
    for i, p in enumerate(spec.predicates):
        for attr in ("expected_file", "schema_file"):
            rel = getattr(p, attr, None)
            if isinstance(rel, str):
                need(f"predicates.{i}.{attr}", f"{spec.hidden}/{rel}")
        if p.kind == "python":
            need(f"predicates.{i}.file", f"{spec.verify_dir}/{getattr(p, 'file')}")


def load_suite(path: Path | str) -> LoadedSuite:
    """Load a suite folder (or its suite.yaml) and every task in it."""
    root = Path(path).resolve()  # absolute: mounts (solution, setup) must not depend on the cwd
    if root.is_file():
        root = root.parent
    problems: list[SpecProblem] = []
    if not root.is_dir():
        raise SpecError([SpecProblem(str(root), "", "suite folder not found", "pass the folder that holds suite.yaml")])
    data = _read_yaml(root / SUITE_FILE, problems)
    if data is None:
        raise SpecError(problems)
    try:
        spec = SuiteSpec.model_validate(data)
    except ValidationError as e:
        raise SpecError(_problems_from_validation(root / SUITE_FILE, e)) from None
    tasks_root = root / spec.tasks_dir
    if not tasks_root.is_dir():
        raise SpecError([SpecProblem(str(root / SUITE_FILE), "tasks_dir", f"folder {spec.tasks_dir!r} not found", "create it or change 'tasks_dir'")])
    if spec.tasks is not None:
        dirs = [tasks_root / t for t in spec.tasks]
        for i, d in enumerate(dirs):
            if not d.is_dir():
                problems.append(SpecProblem(str(root / SUITE_FILE), f"tasks.{i}", f"task folder {d.name!r} not found", "remove it or create the folder"))
    else:
        dirs = sorted(d for d in tasks_root.iterdir() if d.is_dir() and not d.name.startswith("."))
    tasks: list[LoadedTask] = []
    for d in dirs:
        if not d.is_dir():
            continue
        t = _load_task(d, spec, problems)
        if t is not None:
            tasks.append(t)
    ids = [t.id for t in tasks]
    for tid in {i for i in ids if ids.count(i) > 1}:
        problems.append(SpecProblem(str(tasks_root), "id", f"task id {tid!r} is used by more than one folder", "give each task a unique id"))
    if not problems and not tasks:
        problems.append(SpecProblem(str(tasks_root), "", "the suite has no tasks", "add a folder with a task.yaml"))
    used = {t.spec.category for t in tasks}
    for i, c in enumerate(spec.categories):
        if tasks and c.id not in used:  # its frozen weight would otherwise vanish from every macro-average
            problems.append(SpecProblem(str(root / SUITE_FILE), f"categories.{i}", f"category {c.id!r} has no task",
                                        "add a task with this category or remove the category"))
    if problems:
        raise SpecError(problems)
    return LoadedSuite(spec=spec, root=root, tasks=tasks)
