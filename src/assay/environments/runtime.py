"""A suite's images made ready before any trial, and the one a task's sandboxes run over.

:func:`ensure_suite` builds what the store lacks (a cached image costs one digest check) and
refuses the run, with every failing task's file, line and build log tail, before anything runs;
:func:`image_root` is what a trial's and a verifier's sandbox are handed.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from assay.environments.build import BuildFailed, Progress, build
from assay.environments.plan import ImagePlan, extension_plan, plan_for
from assay.environments.store import ImageInfo, ImageStore
from assay.errors import SetupError, SpecError, SpecProblem
from assay.sandbox.image_root import ImageRoot
from assay.spec.environment import EnvironmentRecord
from assay.spec.load import TASK_FILE, LoadedSuite, LoadedTask
from assay.untrusted.rooted import resolve_in


def plan_of(task: LoadedTask, *, verifier: bool = False) -> ImagePlan | None:
    """The build plan of a task's environment (None: it runs over the host's system); with
    ``verifier``, of its verifier's own image (None: the verifier runs over the task's)."""
    env = task.spec.verifier_environment if verifier else task.spec.environment
    if env is None:
        return None
    if env.extends is not None:  # the task's own image, then the verifier's steps
        parent = plan_of(task)
        if parent is None:
            raise SpecError([SpecProblem(str(task.dir / TASK_FILE), "verifier_environment.extends",
                                         "it extends the task's image, but the task has no `environment`",
                                         "declare `environment:` or drop `extends`")])
        plan = extension_plan(f"{task.id}.verifier", parent, env, task.dir / TASK_FILE)
    else:
        plan = plan_for(task.id, task.dir, env, task.dir / TASK_FILE)
    own = getattr(task.spec, "build_timeout_s", None)  # a task-level bound, where the task declares one
    if own:
        plan = replace(plan, timeout_s=float(own))
    return plan


def problem(e: BuildFailed) -> SpecProblem:
    tail = e.tail.strip().splitlines()[-15:]
    log = f" (build log: {e.log})" if e.log else ""
    return SpecProblem(str(e.file), e.where, f"{e.message}{log}\n    " + "\n    ".join(tail),
                       "fix the step or the package name; `assay env build` rebuilds")


class Built(NamedTuple):
    """What :func:`build_each` made ready: each task's image, the tasks whose build failed (with
    file, line and build log tail), and each verifier's own image where a task has one."""

    images: dict[str, ImageInfo]
    failed: dict[str, SpecProblem]
    verifier: dict[str, ImageInfo]


def build_each(suite: LoadedSuite, task_ids: list[str] | None = None, *, store: ImageStore | None = None,
               progress: Progress | None = None) -> Built:
    """Every image the planned tasks need, built if missing (``assay audit`` labels the tasks whose
    build failed and goes on; a run refuses them all, :func:`ensure_suite`)."""
    store = store or ImageStore()
    built = Built({}, {}, {})
    for t in suite.tasks:
        if task_ids and t.id not in task_ids:
            continue
        for verifier in (False, True):  # the agent's image, then the verifier's own where it has one
            plan = plan_of(t, verifier=verifier)
            if plan is None or t.id in built.failed:
                continue
            try:
                info = build(store, plan, progress) if progress else build(store, plan)
            except BuildFailed as e:
                built.failed[t.id] = problem(e)
                continue
            (built.verifier if verifier else built.images)[t.id] = info
    return built


def ensure_suite(suite: LoadedSuite, task_ids: list[str] | None = None, *, store: ImageStore | None = None,
                 progress: Progress | None = None) -> dict[str, ImageInfo]:
    """Every image the planned tasks need, built if missing; SpecError listing each failure."""
    built = build_each(suite, task_ids, store=store, progress=progress)
    if built.failed:
        raise SpecError(list(built.failed.values()))
    return built.images


def record(info: ImageInfo, task_id: str) -> EnvironmentRecord:
    """What the manifest records of a task's image (``task@sha256:...``)."""
    return EnvironmentRecord(image=f"{task_id}@{info.digest}", rootfs_sha256=info.rootfs_sha256,
                             deviations=list(info.deviations), workdir=info.workdir)


def root_of(info: ImageInfo, store: ImageStore) -> ImageRoot:
    return ImageRoot(rootfs=store.rootfs(info.digest), digest=info.digest, env=tuple(info.env.items()),
                     user=info.user, workdir=info.workdir, deviations=tuple(info.deviations))


def seed_workspace(root: ImageRoot | None, workspace: Path) -> int:
    """What the image holds at its WORKDIR (a Dockerfile's ``COPY . /app``) copied into a fresh
    workspace where the task's own files do not already stand: the workspace is mounted over
    that folder, so it would otherwise vanish. Returns the files copied."""
    if root is None or not root.workdir:
        return 0
    src = resolve_in(root.rootfs, root.workdir)  # inside the image: a link there never leads to the host
    if src is None or not src.is_dir():
        return 0
    n = 0
    for p in sorted(src.rglob("*")):
        dest = workspace / p.relative_to(src)
        if dest.exists() or dest.is_symlink():
            continue
        if p.is_symlink():
            dest.symlink_to(os.readlink(p))
        elif p.is_dir():
            dest.mkdir(parents=True)
        elif p.is_file():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, dest)
            n += 1
    return n


_ROOTS: dict[tuple[Path, str], ImageRoot] = {}


def verifier_root(task: LoadedTask, store: ImageStore | None = None) -> ImageRoot | None:
    """The image a task's verifier sandboxes run over: its own (Harbor's separate verifier) seen
    with the workspace where the agent saw it (never at the verifier image's WORKDIR), else the
    task's."""
    own = image_root(task, store, verifier=True)
    if own is None:
        return image_root(task, store)
    agent = image_root(task, store)
    seen = task.spec.workdir if "workdir" in task.spec.model_fields_set else (
        agent.workdir if agent is not None and agent.workdir else task.spec.workdir)
    return replace(own, workdir=seen)


def verifier_files_at_workdir(task: LoadedTask, root: ImageRoot | None) -> Path | None:
    """The verifier's own image's folder where the workspace is seen (``root``: what
    :func:`verifier_root` gave), or None: no image of its own, or nothing there. The verifier lays
    it over its copy of the workspace, so a grader the image keeps there is never the agent's."""
    env = task.spec.verifier_environment
    if root is None or env is None or env.extends is not None or not root.workdir:
        return None  # an image over the task's holds the task's own files there, which the agent had
    folder = resolve_in(root.rootfs, root.workdir)  # inside the image, as the verifier's own system sees it
    return folder if folder is not None and folder.is_dir() and any(folder.iterdir()) else None


def image_root(task: LoadedTask, store: ImageStore | None = None, *, verifier: bool = False) -> ImageRoot | None:
    """The image a task's sandboxes run over (None: the host's system); SetupError if it was
    never built (a run builds every image before its first trial). ``verifier``: the verifier's
    own image as built (None when it has none; :func:`verifier_root` is what a verifier runs over)."""
    plan = plan_of(task, verifier=verifier)
    if plan is None:
        return None
    store = store or ImageStore()
    key = (store.root, plan.digest)
    if key in _ROOTS:
        return _ROOTS[key]
    info = store.get(plan.digest)
    if info is None:
        raise SetupError(f"task {task.id!r}: its image {plan.digest} is not in the store {store.root}; "
                         "run `assay env build SUITE`")
    _ROOTS[key] = root = root_of(info, store)
    return root
