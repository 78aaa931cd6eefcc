"""What the loader checks of a task's environment before anything is built: the suite's default
applied, the Dockerfile read (every line assay cannot honour refused with its file and line),
every COPY source found inside its context."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from assay.errors import SpecProblem
from assay.spec.environment import EnvironmentSpec
from assay.spec.environment_dockerfile import DockerfileError, parse
from assay.spec.suite import SuiteSpec
from assay.spec.task_checks import short
from assay.untrusted.rooted import matches


def with_default(data: dict[str, Any], suite: SuiteSpec | None, task_dir: Path, suite_root: Path | None) -> dict[str, Any]:
    """``data`` with the suite's ``default_environment`` when the task declares none, its paths
    made relative to the task folder."""
    if suite is None or suite.default_environment is None or "environment" in data or suite_root is None:
        return data
    env = suite.default_environment.model_dump(exclude_unset=True)
    env["context"] = os.path.relpath(suite_root / suite.default_environment.context, task_dir)
    if suite.default_environment.dockerfile is not None:
        env["dockerfile"] = os.path.relpath(suite_root / suite.default_environment.dockerfile, task_dir)
    return {**data, "environment": env}


def _is(p: Path, kind: str) -> bool:
    """Whether ``p`` is a folder, a file or anything; False for a path the file system refuses
    to look up (a name too long): nothing can be there."""
    try:
        return p.is_dir() if kind == "dir" else p.is_file() if kind == "file" else p.exists()
    except OSError:
        return False


def check(task_dir: Path, env: EnvironmentSpec | None, file: Path, problems: list[SpecProblem],
          field: str = "environment") -> None:
    """Problems of ``env`` (the task's ``field``: ``environment`` or ``verifier_environment``, of
    the task in ``task_dir``) added to ``problems``."""
    if env is None:
        return
    if env.extends is not None:
        if field != "verifier_environment":
            problems.append(SpecProblem(str(file), f"{field}.extends", "only a verifier's image extends the task's "
                                        "image (the agent's image is the one it extends)",
                                        "move it under `verifier_environment:`, or drop `extends`"))
        return
    context = (task_dir / env.context).resolve()
    if not _is(context, "dir"):
        problems.append(SpecProblem(str(file), f"{field}.context", f"folder {short(env.context)} not found",
                                    f"create it or change '{field}.context'"))
        return
    if env.dockerfile is None:
        return
    path = (task_dir / env.dockerfile).resolve()
    if not _is(path, "file"):
        problems.append(SpecProblem(str(file), f"{field}.dockerfile", f"file {short(env.dockerfile)} not found",
                                    f"create it or change '{field}.dockerfile'"))
        return
    try:
        parsed = parse(path)
    except DockerfileError as e:
        problems.append(SpecProblem(str(e.path), f"line {e.line}", e.message, e.fix))
        return
    except (OSError, UnicodeDecodeError) as e:
        problems.append(SpecProblem(str(path), "", f"cannot be read: {e}", "save the Dockerfile as UTF-8 text"))
        return
    for step in parsed.every_step():
        if step.kind != "copy" or step.from_stage is not None:  # a stage's paths are checked when it is built
            continue
        for src in step.sources:
            if not matches(context, src):  # resolved inside the context, as the builder reads it
                problems.append(SpecProblem(str(path), f"line {step.line}", f"COPY source {src!r} not found in the "
                                            f"build context {context}", "put the file there or fix the path"))


def check_verifier_image(spec: Any, file: Path, problems: list[SpecProblem]) -> None:
    """A verifier image stands beside the agent's (never alone: the workspace is seen at the agent's
    workdir), and a test script read from the image (``reward_file`` with ``tests: null``) needs one."""
    if spec.verifier_environment is not None and spec.environment is None:
        problems.append(SpecProblem(str(file), "verifier_environment", "a verifier image needs the task's own "
                                    "`environment` (the image the agent runs in)",
                                    "declare `environment:` or drop `verifier_environment:`"))
    for i, pred in enumerate(spec.predicates):
        if getattr(pred, "kind", None) == "reward_file" and pred.tests is None and spec.verifier_environment is None:
            problems.append(SpecProblem(str(file), f"predicates[{i}].tests", "tests: null runs the script the "
                                        "verifier's image holds at /tests, but the task declares no "
                                        "`verifier_environment`", "name the folder under hidden/ (tests: tests) "
                                        "or declare `verifier_environment:`"))
