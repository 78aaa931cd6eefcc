"""A SWE-bench task's repository at its ``base_commit``, read from a local folder (the importer
never fetches), and its patches applied in scratch copies at import time: the test patch's
files become the verifier's hidden restore set, the gold patch's files the oracle's solution."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

#: the pytest configuration files, in the order pytest itself prefers them at the rootdir
INI_FILES = (("pytest.ini", None), ("pyproject.toml", "[tool.pytest.ini_options]"), ("tox.ini", "[pytest]"),
             ("setup.cfg", "[tool:pytest]"))
_PATCH_PATH = re.compile(r"^(?:---|\+\+\+) (?:[ab]/)?(\S.*?)\s*$", re.M)


class RepoError(Exception):
    """The repository or a patch could not be read or applied (the task is refused with this)."""


def find_snapshot(repos: Path | None, repo: str, commit: str, scratch: Path) -> Path:
    """The repository's tree at ``commit``: ``repos/<owner>__<name>@<commit>/`` (a plain tree),
    else ``git archive`` of ``commit`` from a clone at ``repos/<owner>__<name>`` or
    ``repos/<name>``; RepoError naming what was looked for."""
    if not repos or not repos.is_dir():
        raise RepoError(f"the repository {repo} at {commit[:12]} is needed and no --repos folder was given "
                        "(the importer does not fetch)")
    slug = repo.replace("/", "__")
    for d in sorted(repos.glob(f"{slug}@*")):
        if d.is_dir() and len(d.name.split("@", 1)[1]) >= 7 and commit.startswith(d.name.split("@", 1)[1]):
            return d
    for clone in (repos / slug, repos / repo.rsplit("/", 1)[-1]):
        if not clone.is_dir():
            continue
        out = scratch / "base"
        out.mkdir(parents=True)
        git = ["git", "-C", str(clone), "-c", "core.autocrlf=false"]
        arch = subprocess.run([*git, "archive", "--format=tar", f"{commit}^{{commit}}"], capture_output=True)
        if arch.returncode != 0:
            raise RepoError(f"{clone}: commit {commit[:12]} is not in this clone "
                            f"({arch.stderr.decode(errors='replace').strip()[:200]})")
        subprocess.run(["tar", "-x", "-C", str(out)], input=arch.stdout, check=True)
        return out
    raise RepoError(f"the repository {repo} at {commit[:12]} is not under {repos} "
                    f"(looked for {slug}@{commit[:12]}/, {slug}/ and {repo.rsplit('/', 1)[-1]}/)")


def patch_paths(patch: str) -> list[str]:
    """Every path a unified diff touches (either side; ``/dev/null`` left out)."""
    return sorted({p for p in _PATCH_PATH.findall(patch) if p != "/dev/null"})


@dataclass
class Applied:
    """A patch applied to a copy of the tree: ``tree`` is the result, ``changed`` the touched
    paths that exist after it, ``deleted`` those it removed."""

    tree: Path
    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)


def apply(base: Path, patch: str, scratch: Path, name: str) -> Applied:
    """``patch`` applied with ``git apply`` to a copy of ``base`` in ``scratch/name``."""
    tree = scratch / name
    shutil.copytree(base, tree, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    fd, pfile = tempfile.mkstemp(dir=scratch, suffix=".patch")
    with os.fdopen(fd, "w", newline="") as f:
        f.write(patch)
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(scratch)}  # never a repository above the copy
    res = subprocess.run(["git", "apply", "--whitespace=nowarn", pfile], cwd=tree, env=env, capture_output=True)
    if res.returncode != 0:
        raise RepoError(f"{name} does not apply at base_commit: {res.stderr.decode(errors='replace').strip()[:300]}")
    out = Applied(tree)
    for p in patch_paths(patch):
        (out.changed if (tree / p).is_file() else out.deleted).append(p)
    return out


def inifile(tree: Path) -> str | None:
    """The repository's pytest configuration file at its root, as pytest would pick it."""
    for name, section in INI_FILES:
        p = tree / name
        if p.is_file() and (section is None or section in p.read_text(errors="replace")):
            return name
    return None


def conftests(tree: Path) -> list[str]:
    """Every conftest.py of the repository (the verifier removes any other the agent adds)."""
    return sorted(p.relative_to(tree).as_posix() for p in tree.rglob("conftest.py")
                  if p.is_file() and ".git" not in p.relative_to(tree).parts)


def copy_files(tree: Path, paths: list[str], dst: Path) -> None:
    """``paths`` of ``tree`` copied into ``dst`` by the same relative paths."""
    for rel in paths:
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(tree / rel, dst / rel)
