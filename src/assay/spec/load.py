"""Loading suites and tasks from disk, with errors that name the file, the field and the fix.

Loading never writes anything. Every problem in every file is collected before raising one
:class:`~assay.errors.SpecError`, so a user fixes a suite in one pass rather than one error
at a time.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from assay.errors import SpecError, SpecProblem
from assay.spec import environment_check
from assay.spec.digest import sha256_bytes, tree_digest, tree_digests, walk_files
from assay.spec.suite import SuiteSpec
from assay.spec.task import TaskSpec
from assay.spec.task_checks import check_paths, check_run_time, escapes, is_inside
from assay.spec.world_checks import check_worlds
from assay.untrusted.tree import MAX_DEPTH
from assay.untrusted.yaml_doc import load_yaml

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
    "finite_number": "use a finite number (YAML's .inf and .nan are not)",
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
            return (self.dir / v.prompt_file).read_text(encoding="utf-8")
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
        ctx = e.get("ctx") or {}
        fix = str(ctx.get("fix") or _FIX_HINTS.get(e["type"], ""))
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
        data = load_yaml(path.read_text())
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
    nul = [SpecProblem(str(path), where, "contains a NUL character (\\0), which no path or text of a task may hold",
                       "remove it") for where in _nul_fields(data)]
    if nul:
        problems.extend(nul)
        return None
    return data


def _nul_fields(data: Any, where: str = "") -> list[str]:
    """The dotted fields of a parsed YAML document whose key or text holds a NUL character (a path
    with one crashes every file call that gets it); iterative, as deep documents are user input."""
    found: list[str] = []
    stack: list[tuple[Any, str]] = [(data, where)]
    while stack:
        node, at = stack.pop()
        if isinstance(node, str):
            if "\x00" in node:
                found.append(at)
        elif isinstance(node, dict):
            for k, v in node.items():
                name = f"{at}.{k}" if at else str(k)
                if isinstance(k, str) and "\x00" in k:
                    found.append(name)
                stack.append((v, name))
        elif isinstance(node, list):
            stack.extend((v, f"{at}.{i}" if at else str(i)) for i, v in enumerate(node))
    return sorted(found)


def load_task(task_dir: Path, *, suite: SuiteSpec | None = None) -> LoadedTask:
    """Load one task folder; raises :class:`SpecError` listing every problem found."""
    problems: list[SpecProblem] = []
    task = _load_task(task_dir, suite, problems)
    if problems or task is None:
        raise SpecError(problems)
    return task


def _read_text(path: Path, problems: list[SpecProblem]) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        problems.append(SpecProblem(str(path), "", f"not UTF-8 text (byte {e.object[e.start]:#04x} at offset {e.start})",
                                    "save the file as UTF-8"))
    except OSError as e:
        problems.append(SpecProblem(str(path), "", f"cannot be read: {e.strerror}", "make the file readable"))
    return None


def _check_links(task_dir: Path, spec: TaskSpec, suite_root: Path | None, problems: list[SpecProblem]) -> None:
    """Symbolic links in a task never lead out: a workspace link stays in the workspace (the agent
    would otherwise read the host or the hidden tests through it), any other stays in the suite."""
    workspace = task_dir / spec.workspace
    fence_all = suite_root or task_dir
    for p in walk_files(task_dir):
        if not p.is_symlink():
            continue
        fence = workspace if p.is_relative_to(workspace) else fence_all
        try:
            inside = is_inside(fence, p)
        except (RuntimeError, OSError):  # a loop of links (Python raises RuntimeError, newer ones OSError)
            problems.append(SpecProblem(str(p), "", f"symbolic link to {os.readlink(p)!r} is a loop of links "
                                        "that never reaches a file", "remove the link or point it at a file"))
            continue
        if not inside:
            where = "the workspace" if fence is workspace else "the suite"
            problems.append(SpecProblem(str(p), "", f"symbolic link to {os.readlink(p)!r} points out of {where}",
                                        "replace the link with a copy of the file it points to"))


def _check_entries(task_dir: Path, spec: TaskSpec, problems: list[SpecProblem]) -> None:
    """A task holds files, folders and links only, and its workspace no deeper than the harness
    copies it (:data:`~assay.untrusted.tree.MAX_DEPTH`): anything else would be silently
    missing from every agent's workspace."""
    workspace = task_dir / spec.workspace
    for p in walk_files(task_dir):
        mode = p.lstat().st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            problems.append(SpecProblem(str(p), "", "not a regular file, folder or link (a FIFO, socket or device)",
                                        "remove it from the task"))
        elif p.is_relative_to(workspace) and len(p.relative_to(workspace).parts) > MAX_DEPTH:
            problems.append(SpecProblem(str(p), "", f"more than {MAX_DEPTH} levels deep in the workspace, deeper "
                                        "than the harness copies it", "move it nearer the workspace's top"))


def _load_task(task_dir: Path, suite: SuiteSpec | None, problems: list[SpecProblem],
               suite_root: Path | None = None) -> LoadedTask | None:
    file = task_dir / TASK_FILE
    data = _read_yaml(file, problems)
    if data is None:
        return None
    data.setdefault("id", task_dir.name)
    data = environment_check.with_default(data, suite, task_dir, suite_root)
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
    check_paths(task_dir, spec, file, problems)
    check_worlds(spec, file, problems)
    _check_links(task_dir, spec, suite_root, problems)
    _check_entries(task_dir, spec, problems)
    environment_check.check(task_dir, spec.environment, file, problems)
    environment_check.check(task_dir, spec.verifier_environment, file, problems, "verifier_environment")
    environment_check.check_verifier_image(spec, file, problems)
    if len(problems) == before:
        check_run_time(task_dir, spec, file, problems)
    if len(problems) > before:
        return None
    prompt = _read_text(task_dir / spec.prompt_file, problems)
    for v in spec.variants:
        if v.prompt_file is not None:
            _read_text(task_dir / v.prompt_file, problems)
    if len(problems) > before or prompt is None:
        return None
    if not prompt.strip():
        problems.append(SpecProblem(str(task_dir / spec.prompt_file), "", "prompt is empty", "write the instruction"))
        return None
    return LoadedTask(spec=spec, dir=task_dir, prompt=prompt, file_digests=tree_digests(task_dir))


def load_suite(path: Path | str) -> LoadedSuite:
    """Load a suite folder (or its suite.yaml) and every task in it."""
    root = Path(path).resolve()  # absolute: mounts (solution, setup) must not depend on the cwd
    if root.is_file() and root.name != SUITE_FILE:  # not the suite beside it, as if this were its file
        raise SpecError([SpecProblem(str(root), "", f"a file, not a suite folder or its {SUITE_FILE}",
                                     f"pass the folder that holds {SUITE_FILE}")])
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
    if escapes(spec.tasks_dir) or not is_inside(root, tasks_root):
        raise SpecError([SpecProblem(str(root / SUITE_FILE), "tasks_dir", f"folder {spec.tasks_dir!r} leaves the suite folder",
                                     "use a folder inside the suite folder")])
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
        if d.is_symlink() or not is_inside(tasks_root, d):
            problems.append(SpecProblem(str(d), "", "task folder is a link or lies outside the suite's tasks folder",
                                        "make it a real folder inside the suite"))
            continue
        t = _load_task(d, spec, problems, root)
        if t is not None:
            tasks.append(t)
    by_id: dict[str, list[LoadedTask]] = {}
    for t in tasks:
        by_id.setdefault(t.id, []).append(t)
    for tid, same in sorted(by_id.items()):
        if len(same) > 1:
            folders = " and ".join(str(t.dir) for t in same)
            problems.append(SpecProblem(str(same[-1].dir / TASK_FILE), "id", f"task id {tid!r} is used by {folders}",
                                        "give each task a unique id"))
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


def harness_network_needs(suite: LoadedSuite, *, model: str | None, task_ids: list[str] | None = None) -> list[str]:
    """What in a planned run can only work over the harness network (law 6); a run under
    ``--network none`` that needs any of it is refused before it starts."""
    needs = [f"the model gateway (--model {model})"] if model else []
    for t in suite.tasks:
        if task_ids and t.id not in task_ids:
            continue
        served = [name for name, v in (("worlds", t.spec.worlds), ("approvals", t.spec.approvals)) if v is not None]
        if served:
            needs.append(f"task {t.id!r} ({' and '.join(served)} served by the harness)")
    return needs
