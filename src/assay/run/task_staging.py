"""What of a task folder may enter a sandbox: private copies, never the folder itself.

Law 2: hidden tests, expected values and verifier code never enter the agent's sandbox. A bind
of a task path (the setup script's folder, a reference solution at the task's root) also shows
its host path in ``/proc/self/mountinfo`` and, for a folder, everything beside the file that was
wanted. So the harness copies exactly what a sandbox needs into the attempt's scratch (which no
sandbox sees) and binds the copy: the setup script with the files the task declares for it, and
any agent mount that lies inside the task folder, minus the task's private parts.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from assay.sandbox.base import Mount
from assay.spec.load import LoadedTask

TASK_FILE = "task.yaml"


def private_parts(task: LoadedTask, *, solution: bool = True) -> set[Path]:
    """The task's files no agent may read: its definition, hidden values, verifier code, model
    script, setup script and files, and (unless ``solution`` is False: the oracle's own mount)
    the reference solution; the workspace fixture too, which reaches the agent only as its copy."""
    spec = task.spec
    rels = [TASK_FILE, spec.hidden, spec.verify_dir, spec.workspace, spec.model_script, spec.setup, *spec.setup_files]
    out = {(task.dir / r).resolve() for r in rels if r}
    sol = task.path(spec.solution)
    if solution and sol is not None:
        out.add(sol.resolve() if sol.parent.resolve() == task.dir.resolve() else sol.parent.resolve())
    return out


def _copy(src: Path, dst: Path, skip: set[Path]) -> None:
    """Copy ``src`` to ``dst`` without following links, leaving out every path in ``skip``."""
    if src.resolve() in skip:
        return
    if src.is_symlink() or not src.is_dir():
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst, follow_symlinks=False)
        return
    dst.mkdir(parents=True, exist_ok=True)
    for child in sorted(src.iterdir()):
        _copy(child, dst / child.name, skip)


def stage_setup(task: LoadedTask, dest: Path) -> Path:
    """The setup script and the task's ``setup_files`` at their relative paths under ``dest``
    (the script's own folder is not copied: only what is declared)."""
    spec = task.spec
    assert spec.setup is not None
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for rel in [spec.setup, *spec.setup_files]:
        _copy(task.dir / rel, dest / rel, set())
    return dest


def stage_mounts(mounts: list[Mount], task: LoadedTask, dest: Path, solution_target: str) -> list[Mount]:
    """``mounts`` with every source inside the task folder replaced by a private copy (without
    the task's private parts; the mount at ``solution_target``, the oracle's, and at the task's
    own ``solution_dir`` keep the reference solution); other mounts unchanged."""
    keeps = {solution_target, *([task.spec.solution_dir] if task.spec.solution_dir else [])}
    root = task.dir.resolve()
    out: list[Mount] = []
    for i, m in enumerate(mounts):
        src = Path(m.source).resolve()
        if src != root and not src.is_relative_to(root):
            out.append(m)
            continue
        copy = dest / f"mount-{i}" / src.name
        if copy.exists():
            shutil.rmtree(copy.parent)
        _copy(src, copy, private_parts(task, solution=m.target not in keeps))
        if not copy.exists():  # the mount was a private part itself: an empty folder stands in
            copy.mkdir(parents=True)
        out.append(Mount(copy, m.target, m.writable))
    return out
