"""`assay lint SUITE`: a static check, before anything runs, of what each task exposes to the
agent that it should not (docs/security.md, "Lint rules"). Run by `assay validate` and at the
start of `assay run` too. A finding is an error unless the task names its rule in
``exposure_intended`` with a reason. This reads task files only; what a sandboxed agent can
really see is a separate, dynamic probe (`assay validate --exposure`)."""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
from dataclasses import dataclass

from assay.spec.load import LoadedSuite, LoadedTask
from assay.spec.predicates import CommandCheck, FailPassLists
from assay.verify.lint_files import files as _files, read_head as _read
from assay.verify.lint_git import git_problems
from assay.verify.lint_image import image_exposures

#: every rule, with what it flags
RULES = {
    "git_beyond_base": "git data in the workspace reaching beyond the task's base commit",
    "hidden_readable": "hidden test, expected value or solution text readable from the agent's side (also: a file "
                       "the hidden tests read that the task's image writes outside the workspace)",
    "verifier_program_writable": "a verifier command resolving its program through a path the agent can write "
                                 "(also: a program the hidden tests run that the image copies into the workspace)",
    "tests_in_workspace": "tests living in the agent's workspace",
    "credential_in_prompt": "a world or gateway credential in the prompt",
    "exposure_intended": "an intended exposure naming no known rule",
}
#: shortest hidden text (a file, or a line stating an expected value) searched for where the agent reads
MIN_LINE = 24
_TESTS = ("test_*.py", "*_test.py", "conftest.py", "*.test.js", "*.spec.js", "*_test.go", "pytest.ini")
_CREDENTIAL = re.compile(r"\bsk-[A-Za-z0-9_-]{12,}|\bBearer\s+[A-Za-z0-9._-]{12,}|ASSAY_GATEWAY_KEY|\{api_key\}")
_PATH_SET = re.compile(r"(?:^|[\s;&|])(?:export\s+)?PATH=([^\s;&|]*)")


def _relative_on_path(value: str) -> bool:
    """A PATH value with an empty, relative or agent-writable folder (searched before the system's)."""
    return any(d in ("", ".") or not d.startswith(("/", "$")) or d.startswith(("/work", "/tmp", "/home"))
               for d in value.strip("'\"").split(":"))


@dataclass(frozen=True)
class Finding:
    task_id: str
    rule: str
    path: str
    detail: str
    intended: str | None = None  # the task's reason, when it declares the finding intended

    @property
    def error(self) -> bool:
        return self.intended is None

    def line(self) -> str:
        mark = f" (intended: {self.intended})" if self.intended else ""
        return f"{self.task_id}: {self.rule}{mark} {self.path}: {self.detail}"


def _secrets(task: LoadedTask) -> dict[str, str]:
    """What must stay on the verifier's side -> where it comes from: the whole text of every
    hidden, verifier and solution file, and each line of a hidden check that states an expected
    value (``assert``, ``expect``). Other single lines are left out: an expected output shares
    most lines with the input the agent is given."""
    out: dict[str, str] = {}
    restored = _restored(task)
    for folder in (task.spec.hidden, task.spec.verify_dir, task.spec.solution or "solution"):
        for rel, path in _files(task.dir / folder):
            text = _read(path).strip()
            # a repository file the verifier writes over its copy (SWE-bench): only what the
            # test patch added to it is hidden; the rest is the repository the agent is given
            base = restored.get(f"{folder}/{rel}", (None, None))[1]
            if len(text) >= MIN_LINE and base is None:
                out.setdefault(text, f"{folder}/{rel} (whole file)")
            for line in text.splitlines():
                line = line.strip()
                if (len(line) >= MIN_LINE and re.search(r"\bassert\b|expect", line, re.IGNORECASE)
                        and (base is None or line not in base)):
                    out.setdefault(line, f"{folder}/{rel}")
    return out


def _restored(task: LoadedTask) -> dict[str, tuple[str, str]]:
    """``hidden/<restore>/<path>`` -> (``<path>``, the workspace's own text there), for the files a
    ``test_lists`` predicate writes over the verifier's copy."""
    out: dict[str, tuple[str, str]] = {}
    for p in task.spec.predicates:
        if isinstance(p, FailPassLists):
            for rel, _ in _files(task.dir / task.spec.hidden / p.restore):
                out[f"{task.spec.hidden}/{p.restore}/{rel}"] = (rel, _read(task.dir / task.spec.workspace / rel))
    return out


def _hidden_readable(task: LoadedTask) -> list[tuple[str, str]]:
    secrets = _secrets(task)
    if not secrets:
        return []
    out = []
    for rel, path in _files(task.dir / task.spec.workspace):
        text = _read(path)
        hit = next((src for line, src in secrets.items() if line in text), None)
        if hit:
            out.append((f"{task.spec.workspace}/{rel}", f"holds text of {hit}"))
    for v in task.spec.variants:
        for name, value in v.env.items():
            hit = next((src for line, src in secrets.items()
                        if line in value or (len(value) >= MIN_LINE and value in line)), None)
            if hit:
                out.append((f"variant {v.id} env {name}", f"the agent's environment holds text of {hit}"))
        if v.prompt and (hit := next((src for line, src in secrets.items() if line in v.prompt), None)):
            out.append((f"variant {v.id} prompt", f"holds text of {hit}"))
    if (hit := next((src for line, src in secrets.items() if line in task.prompt), None)):
        out.append((task.spec.prompt_file, f"the prompt holds text of {hit}"))
    return out


def _program(cmd: str | list[str]) -> tuple[str, str]:
    """(the program a command runs, the command as text)."""
    if isinstance(cmd, list):
        return (cmd[0] if cmd else ""), shlex.join(cmd)
    try:
        words = shlex.split(cmd)
    except ValueError:
        words = cmd.split()
    words = [w for w in words if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)]
    return (words[0] if words else ""), cmd


def _writable_programs(task: LoadedTask) -> list[tuple[str, str]]:
    out = []
    for p in task.spec.predicates:
        if not isinstance(p, CommandCheck):
            continue
        prog, text = _program(p.cmd)
        if p.cwd == "workspace" and prog and "/" in prog and not prog.startswith("/"):
            out.append((f"predicate {p.id}", f"runs {prog!r} from the workspace the agent wrote"))
        elif prog.startswith(("/work", "/tmp", "/home", "~", "$HOME")):
            out.append((f"predicate {p.id}", f"runs {prog!r} from a path the agent can write"))
        elif any(_relative_on_path(m) for m in _PATH_SET.findall(text)):
            out.append((f"predicate {p.id}", "puts a relative folder on PATH: a planted wrapper is found first"))
    for v in task.spec.variants:
        if "PATH" in v.env and _relative_on_path(v.env["PATH"]):
            out.append((f"variant {v.id} env PATH", "a relative folder on the agent's PATH"))
    return out


def _tests_in_workspace(task: LoadedTask) -> list[tuple[str, str]]:
    out = []
    restored = {rel for rel, _ in _restored(task).values()}  # written over the verifier's copy: edits do not count
    for rel, _ in _files(task.dir / task.spec.workspace):
        name = os.path.basename(rel)
        if rel in restored:
            continue
        if any(fnmatch.fnmatchcase(name, g) for g in _TESTS) or rel.startswith("tests/"):
            out.append((f"{task.spec.workspace}/{rel}", "a test file the agent can read, edit or delete"))
    return out


def _credentials(task: LoadedTask) -> list[tuple[str, str]]:
    texts = [(task.spec.prompt_file, task.prompt)] + [(f"variant {v.id} prompt", v.prompt or "") for v in task.spec.variants]
    out = []
    for where, text in texts:
        if (m := _CREDENTIAL.search(text)):
            out.append((where, f"looks like a credential ({m.group()[:12]}...)"))
        for c in task.spec.canaries:
            value = getattr(c, "value", None)
            if isinstance(value, str) and value and value in text:
                out.append((where, f"holds planted secret {c.name!r}"))
    return out


def lint_task(task: LoadedTask) -> list[Finding]:
    """Every finding of one task, each marked intended when the task says so."""
    image = image_exposures(task)
    checks = {"git_beyond_base": lambda: git_problems(task.dir / task.spec.workspace),
              "hidden_readable": lambda: _hidden_readable(task) + image["hidden_readable"],
              "verifier_program_writable": lambda: _writable_programs(task) + image["verifier_program_writable"],
              "tests_in_workspace": lambda: _tests_in_workspace(task),
              "credential_in_prompt": lambda: _credentials(task)}
    intended = task.spec.exposure_intended
    out = [Finding(task.id, rule, path, detail, intended.get(rule)) for rule, check in checks.items()
           for path, detail in check()]
    out += [Finding(task.id, "exposure_intended", "task.yaml", f"unknown rule {r!r}; known: {sorted(checks)}")
            for r in sorted(set(intended) - set(checks))]
    return out


def lint_suite(suite: LoadedSuite) -> list[Finding]:
    """Every finding of every task of the suite, in task order."""
    return [f for t in suite.tasks for f in lint_task(t)]


__all__ = ["Finding", "RULES", "lint_suite", "lint_task"]
