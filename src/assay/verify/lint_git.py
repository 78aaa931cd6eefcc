"""The git rule of `assay lint`: a workspace's git data must reach no further than its base
commit (HEAD). Agents have read the fix out of a repository's future history: another branch or
tag, a reflog entry, a stash, an object no ref names any more, or a nested repository."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from assay.untrusted.tree import walk_untrusted

_TIMEOUT = 30


def _git(repo: Path, *args: str) -> tuple[int, str]:
    try:
        out = subprocess.run(["git", "--git-dir", str(repo), *args], capture_output=True, text=True,
                             timeout=_TIMEOUT, env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"})
    except (OSError, subprocess.TimeoutExpired) as e:
        return 1, str(e)
    return out.returncode, out.stdout


def git_problems(workspace: Path) -> list[tuple[str, str]]:
    """(path, what reaches beyond the base commit) for the workspace's git data."""
    out: list[tuple[str, str]] = []
    if not workspace.is_dir():
        return out
    for raw, _, st in walk_untrusted(workspace):
        rel = os.fsdecode(raw)
        if os.path.basename(rel) == ".git" and rel != ".git":
            out.append((rel, "a nested repository (its history is not the task's base commit)"))
    top = workspace / ".git"
    if not top.exists():
        return out
    if not top.is_dir():
        return [*out, (".git", "a .git file pointing elsewhere (a worktree or submodule link)")]
    if shutil.which("git") is None:
        return [*out, (".git", "git data that cannot be checked (git is not installed)")]
    code, head = _git(top, "rev-parse", "--verify", "-q", "HEAD")
    if code != 0:
        return [*out, (".git", "no base commit (HEAD does not resolve)")]
    base = head.strip()
    _, refs = _git(top, "for-each-ref", "--format=%(refname) %(objectname)")
    _, current = _git(top, "symbolic-ref", "-q", "HEAD")
    for line in refs.splitlines():
        name, _, obj = line.partition(" ")
        if name == current.strip() and obj == base:
            continue
        _, ahead = _git(top, "rev-list", "--count", name, f"^{base}")
        what = "a stash" if name == "refs/stash" else "a ref"
        out.append((".git", f"{what} {name} ({ahead.strip() or '?'} commit(s) beyond the base)"))
    _, logs = _git(top, "rev-list", "--reflog", f"^{base}")
    if logs.strip():
        out.append((".git", f"reflog entries reaching {len(logs.split())} commit(s) beyond the base"))
    _, dangling = _git(top, "fsck", "--unreachable", "--no-reflogs", "--no-progress")
    objs = [ln for ln in dangling.splitlines() if ln.startswith("unreachable")]
    if objs:
        out.append((".git", f"{len(objs)} object(s) no ref names (a pack or loose object may hold the fix)"))
    return out


__all__ = ["git_problems"]
